package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exampleLine returns the one line of examples/sharding/name that starts
// (after blanks) with prefix, without the prefix.
func exampleLine(t *testing.T, name, prefix string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "sharding", name))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			found = append(found, rest)
		}
	}
	if len(found) != 1 {
		t.Fatalf("examples/sharding/%s: %d lines start with %q, want 1", name, len(found), prefix)
	}
	return found[0]
}

// runShardScripts runs a shell command line of an example once per shard,
// all at once, with tfmirror on PATH and the environment env(k) for shard
// k (from 0), and requires every run to succeed.
func runShardScripts(t *testing.T, dir string, base []string, script string, n int, env func(k int) []string) {
	t.Helper()
	type run struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	runs := make([]*run, n)
	for k := range n {
		r := &run{cmd: exec.Command("sh", "-c", script)}
		home := t.TempDir()
		r.cmd.Dir = dir
		r.cmd.Env = mergeEnv(baseEnv(), []string{
			"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"PATH=" + filepath.Dir(tfmirrorBin) + ":/usr/bin:/bin",
		}, base, env(k))
		r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		runs[k] = r
	}
	for k, r := range runs {
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("shard %d: sh -c %q: %v\nstderr:\n%s", k, script, err, r.stderr.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestShardingExamples runs the tfmirror command lines of the GitHub
// Actions matrix and the Kubernetes Indexed Job examples as their runners
// would, four shards at once, into a real S3 server: each must leave the
// objects of one unsharded build.
func TestShardingExamples(t *testing.T) {
	if tfmirrorBin == "" {
		t.Fatal("tfmirror binary not built")
	}
	srv, c, _ := wholeBuildInBucket(t)
	if err := os.Rename(filepath.Join(c.work, "full.hcl"), filepath.Join(c.work, "mirror.hcl")); err != nil {
		t.Fatal(err)
	}

	t.Run("github-actions", func(t *testing.T) {
		matrix := exampleLine(t, "github-actions.yml", "shard: ")
		if matrix != "[1, 2, 3, 4]" {
			t.Fatalf("the example's matrix is %s; this test runs 4 shards", matrix)
		}
		line := exampleLine(t, "github-actions.yml", "run: tfmirror build ")
		expr := regexp.MustCompile(`\$\{\{ *([a-z.-]+) *\}\}`)
		var missing []string
		script := "tfmirror build " + expr.ReplaceAllStringFunc(line, func(m string) string {
			switch name := expr.FindStringSubmatch(m)[1]; name {
			case "matrix.shard":
				return "$SHARD"
			case "strategy.job-total":
				return "4"
			default:
				missing = append(missing, name)
				return m
			}
		})
		if len(missing) > 0 {
			t.Fatalf("the example uses expressions this test does not know: %v", missing)
		}
		runShardScripts(t, c.work, c.env, script, 4, func(k int) []string {
			return []string{"MIRROR=" + srv.URI(s3Bucket, "actions/"), fmt.Sprintf("SHARD=%d", k+1)}
		})
		sameObjects(t, srv, "whole/", "actions/")
	})

	t.Run("kubernetes", func(t *testing.T) {
		script := strings.ReplaceAll(exampleLine(t, "indexed-job.yaml", "- exec tfmirror build "), "/etc/tfmirror/mirror.hcl", "mirror.hcl")
		runShardScripts(t, c.work, c.env, "exec tfmirror build "+script, 4, func(k int) []string {
			return []string{"MIRROR=" + srv.URI(s3Bucket, "k8s/"), "SHARDS=4", fmt.Sprintf("JOB_COMPLETION_INDEX=%d", k)}
		})
		sameObjects(t, srv, "whole/", "k8s/")
	})
}

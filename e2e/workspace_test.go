package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// TestConcurrentBuildsOnOneHostShareOneCache runs two builds into one
// bucket prefix at the same time, on one host with one cache directory,
// as two CI jobs on one runner do: both work in the cache's workspace for
// that destination. Each must keep its own staging area, so both exit 0
// and the prefix holds both builds' providers. A third build killed
// mid-download leaves its run behind, which the next build there removes
// (its partial downloads it resumes), and no run is left once every
// build has ended.
func TestConcurrentBuildsOnOneHostShareOneCache(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	c := newCrashRegistry(t)
	home := t.TempDir()
	cache := filepath.Join(home, ".cache")
	env := mergeEnv(c.env, s3Environ(srv, srv.Endpoint), []string{"HOME=" + home, "XDG_CACHE_HOME=" + cache})
	out := srv.URI(s3Bucket, "shared/")
	for _, typ := range crashProviders {
		writeFile(t, filepath.Join(c.work, typ+".hcl"), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/%s" {
  versions = ">= 1.0.0"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, typ, c.reg.ServicesURL))
	}
	build := func(typ string) *tfmirrorProc {
		return startTfmirror(t, c.work, env, "build", "--config", typ+".hcl", "--out", out, "--parallel", "1")
	}

	// Six archives of 1 MiB each, about 0.4 s apiece: the second build
	// starts while the first is downloading, and they overlap throughout.
	c.reg.SetArchiveDelay(6 * time.Millisecond)
	started := make(chan struct{})
	var once sync.Once
	c.onBytes(func(int64) { once.Do(func() { close(started) }) })
	first := build("alpha")
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the first build downloaded nothing within a minute")
	}
	c.onBytes(nil)
	second := build("beta")
	for _, p := range []*tfmirrorProc{first, second} {
		if code, _ := p.wait(t); code != 0 {
			t.Errorf("tfmirror %s: exit %d, want 0 (two builds on one host must not share a staging area)\n%s", strings.Join(p.args, " "), code, p.stderr.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	objects := listBucket(t, srv, s3Bucket, "shared/")
	for _, typ := range []string{"alpha", "beta"} {
		for _, v := range crashVersions {
			key := "registry.opentofu.org/hashicorp/" + typ + "/" + v + ".json"
			if _, ok := objects[key]; !ok {
				t.Errorf("the bucket lacks %s", key)
			}
		}
	}
	if res := verifySite(t, c.work, env, out); res.Versions != 4 || res.Archives != 12 {
		t.Errorf("verify counted %d versions, %d archives; want 4 and 12", res.Versions, res.Archives)
	}
	workspaces, err := filepath.Glob(filepath.Join(cache, "tfmirror", "workspace-*"))
	if err != nil || len(workspaces) != 1 {
		t.Fatalf("workspaces in the cache: %v, %v; want one, for the one destination", workspaces, err)
	}
	workspace := workspaces[0]
	if runs := runsIn(t, workspace); len(runs) > 0 {
		t.Errorf("the builds ended, but %s still holds %v", workspace, runs)
	}

	// A build killed mid-download leaves its run; the next build removes it.
	killed := build("gamma")
	c.onBytes(func(int64) { killed.kill() }) // it downloads: its run is there
	if _, wasKilled := killed.wait(t); !wasKilled {
		t.Fatal("the gamma build was not killed")
	}
	c.onBytes(nil)
	left := runsIn(t, workspace)
	if len(left) == 0 {
		t.Fatal("the killed build left no run: the test did not kill it while it worked")
	}
	c.reg.SetArchiveDelay(0)
	if code, _ := build("gamma").wait(t); code != 0 {
		t.Fatalf("the build after the killed one: exit %d", code)
	}
	if runs := runsIn(t, workspace); len(runs) > 0 {
		t.Errorf("the killed build's run %v was not removed by the next build (%v left)", left, runs)
	}
	verifySite(t, c.work, env, out)
}

// runsIn lists the runs (run-*) in a workspace directory.
func runsIn(t testing.TB, workspace string) []string {
	t.Helper()
	entries, err := os.ReadDir(workspace)
	if err != nil {
		t.Errorf("list %s: %v", workspace, err)
		return nil
	}
	var runs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "run-") {
			runs = append(runs, e.Name())
		}
	}
	slices.Sort(runs)
	return runs
}

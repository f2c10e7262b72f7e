package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
)

// pruneSite is a manifest selecting versions of hashicorp/foo from the
// fake registry.
func pruneManifest(o origin, versions string) string {
	return `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "` + versions + `" }
` + o.hostBlock("registry.opentofu.org")
}

// pruneFiles returns every file of a mirror directory outside the private
// directory, with its content and modification time.
func pruneFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == layout.PrivateDirName {
			return fs.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%s @ %s", data, info.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pruneSame(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if w, ok := after[k]; !ok {
			t.Errorf("%s: %s disappeared", what, k)
		} else if v != w {
			t.Errorf("%s: %s changed", what, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s: %s appeared", what, k)
		}
	}
}

// hasWords reports whether a line of out holds the words of want, however
// they are spaced.
func hasWords(out, want string) bool {
	w := strings.Join(strings.Fields(want), " ")
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(strings.Join(strings.Fields(line), " "), w) {
			return true
		}
	}
	return false
}

const pruneFooDir = "registry.opentofu.org/hashicorp/foo/"

// pruneVersionFiles are the files a build writes for one version of foo
// for linux_amd64 and darwin_arm64.
func pruneVersionFiles(v string) []string {
	out := []string{v + ".json"}
	for _, suffix := range []string{"provenance.json", "SHA256SUMS", "SHA256SUMS.sig", "linux_amd64.zip", "darwin_arm64.zip", "linux_amd64.cdx.json", "darwin_arm64.cdx.json"} {
		out = append(out, "terraform-provider-foo_"+v+"_"+suffix)
	}
	for i := range out {
		out[i] = pruneFooDir + out[i]
	}
	return out
}

// builtForPrune builds a mirror of foo 1.0.0 and 2.0.0 into dir/site and
// then changes the manifest to select 2.0.0 only.
func builtForPrune(t *testing.T) (origin, string) {
	t.Helper()
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.reg.Add("hashicorp", "foo", "2.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, pruneManifest(o, ">= 1.0.0"))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	writeManifest(t, dir, pruneManifest(o, "2.0.0"))
	return o, dir
}

// The manifest selects one of two versions built: a dry run changes
// nothing, the cap refuses, and prune --grace 0 removes the other version
// entirely, leaving a mirror verify accepts.
func TestPruneCommand(t *testing.T) {
	o, dir := builtForPrune(t)
	site := filepath.Join(dir, "site")
	before := pruneFiles(t, site)

	code, stdout, stderr := o.run(t, dir, "prune", "--dry-run", "--grace", "0")
	if code != ExitOK {
		t.Fatalf("prune --dry-run: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"would unlist registry.opentofu.org/hashicorp/foo 1.0.0", "would delete registry.opentofu.org/hashicorp/foo 1.0.0", "nothing was written"} {
		if !hasWords(stdout, want) {
			t.Errorf("prune --dry-run does not say %q:\n%s", want, stdout)
		}
	}
	pruneSame(t, "after prune --dry-run", before, pruneFiles(t, site))

	code, stdout, stderr = o.run(t, dir, "prune", "--grace", "0", "--max-deletions", "0")
	if code != ExitFailure || !strings.Contains(stderr, "--max-deletions") || !strings.Contains(stderr, "registry.opentofu.org/hashicorp/foo 1.0.0") {
		t.Errorf("prune over the cap: exit %d, want %d with a message naming the version and the flag\n%s%s", code, ExitFailure, stdout, stderr)
	}
	pruneSame(t, "after a refused prune", before, pruneFiles(t, site))

	code, stdout, stderr = o.run(t, dir, "prune", "--grace", "0")
	if code != ExitOK {
		t.Fatalf("prune: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"unlisted registry.opentofu.org/hashicorp/foo 1.0.0", "deleted registry.opentofu.org/hashicorp/foo 1.0.0", "1 version unlisted, 1 deleted (8 files)"} {
		if !hasWords(stdout, want) {
			t.Errorf("prune does not say %q:\n%s", want, stdout)
		}
	}
	after := pruneFiles(t, site)
	for _, f := range pruneVersionFiles("1.0.0") {
		if _, ok := after[f]; ok {
			t.Errorf("%s is still there", f)
		}
		delete(before, f)
	}
	for _, f := range pruneVersionFiles("2.0.0") {
		if after[f] != before[f] {
			t.Errorf("%s changed or disappeared", f)
		}
	}
	if index, _ := os.ReadFile(filepath.Join(site, filepath.FromSlash(pruneFooDir+"index.json"))); string(index) != "{\n  \"versions\": {\n    \"2.0.0\": {}\n  }\n}" {
		t.Errorf("index.json =\n%s", index)
	}
	if len(after) != len(before)+1 { // the prune's change record
		t.Errorf("after the prune the mirror holds %d files, want %d", len(after), len(before)+1)
	}
	if code, stdout, stderr := o.run(t, dir, "verify", "site"); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("verify after prune: exit %d\n%s%s", code, stdout, stderr)
	}
	// A build of the same manifest finds nothing to do.
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK || !strings.Contains(stdout, "0 mirrored, 2 already present") {
		t.Errorf("build after prune: exit %d\n%s%s", code, stdout, stderr)
	}
}

// With the default grace period the version is unlisted and its files
// wait; --json says so in one object.
func TestPruneCommandGraceJSON(t *testing.T) {
	o, dir := builtForPrune(t)
	code, stdout, stderr := o.run(t, dir, "prune", "--json")
	if code != ExitOK {
		t.Fatalf("prune --json: exit %d\n%s%s", code, stdout, stderr)
	}
	var out struct {
		Destination  string `json:"destination"`
		DryRun       bool   `json:"dry_run"`
		Unlisted     []struct{ Provider, Version string }
		Deleted      []struct{ Provider, Version string }
		Waiting      []struct{ Provider, Version, Until string }
		FilesDeleted []string `json:"files_deleted"`
		Errors       []string `json:"errors"`
		ExitCode     *int     `json:"exit_code"`
	}
	if err := json.Unmarshal(summaryLine(t, stdout), &out); err != nil {
		t.Fatalf("prune --json did not print one JSON object (%v):\n%s", err, stdout)
	}
	if out.ExitCode == nil || *out.ExitCode != 0 || len(out.Errors) != 0 || out.DryRun {
		t.Errorf("exit_code, errors, dry_run: %v %q %v", out.ExitCode, out.Errors, out.DryRun)
	}
	if len(out.Unlisted) != 1 || out.Unlisted[0].Version != "1.0.0" || out.Unlisted[0].Provider != "registry.opentofu.org/hashicorp/foo" {
		t.Errorf("unlisted = %+v", out.Unlisted)
	}
	if len(out.Deleted) != 0 || len(out.FilesDeleted) != 0 {
		t.Errorf("deleted during the grace period: %+v %q", out.Deleted, out.FilesDeleted)
	}
	until, err := time.Parse(time.RFC3339, func() string {
		if len(out.Waiting) == 1 {
			return out.Waiting[0].Until
		}
		return ""
	}())
	if err != nil || until.Before(time.Now().Add(23*time.Hour)) {
		t.Errorf("waiting = %+v, want 1.0.0 until a day from now", out.Waiting)
	}
	site := filepath.Join(dir, "site")
	for _, f := range pruneVersionFiles("1.0.0") {
		if _, err := os.Stat(filepath.Join(site, filepath.FromSlash(f))); err != nil {
			t.Errorf("%s went during the grace period: %v", f, err)
		}
	}
	if code, stdout, stderr := o.run(t, dir, "verify", "site"); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("verify during the grace period: exit %d\n%s%s", code, stdout, stderr)
	}

	// Over the cap, --json still prints one object, with the error.
	code, stdout, _ = o.run(t, dir, "prune", "--json", "--grace", "0", "--max-deletions", "0")
	if code != ExitFailure || !strings.Contains(stdout, `"exit_code":1`) || !strings.Contains(stdout, "--max-deletions") {
		t.Errorf("prune --json over the cap: exit %d\n%s", code, stdout)
	}
}

// Usage mistakes exit 2: a filesystem mirror, a missing directory, bad
// flags, a manifest that selects nothing.
func TestPruneCommandUsage(t *testing.T) {
	o, dir := fooOrigin(t)
	if code, stdout, stderr := o.run(t, dir, "build", "--layout", "packed", "--out", "packed"); code != ExitOK {
		t.Fatalf("build --layout packed: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"prune", "--out", "packed"}, "filesystem mirror"},
		{[]string{"prune", "--out", "missing"}, "no mirror"},
		{[]string{"prune", "--grace", "-1h"}, "--grace"},
		{[]string{"prune", "--max-deletions", "-1"}, "--max-deletions"},
		{[]string{"prune", "--config", "absent.hcl"}, "absent.hcl"},
	} {
		code, stdout, stderr := o.run(t, dir, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, want %d saying %q\n%s%s", strings.Join(c.args, " "), code, ExitUsage, c.want, stdout, stderr)
		}
	}
	writeManifest(t, dir, `platforms = ["linux_amd64"]`)
	if code, _, stderr := o.run(t, dir, "prune", "--out", "packed"); code != ExitUsage || !strings.Contains(stderr, "nothing to mirror") {
		t.Errorf("prune with an empty manifest: exit %d\n%s", code, stderr)
	}
}

// A prune never races a publication: while a build holds the mirror's
// lock and has written, prune waits --lock-timeout, then fails saying
// so, and the mirror is as it was.
func TestPruneWaitsForPublisher(t *testing.T) {
	o, dir := builtForPrune(t)
	site := filepath.Join(dir, "site")
	publisher, err := layout.OpenWait(context.Background(), site, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer publisher.Close()
	if err := publisher.Put(context.Background(), "being-published.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	before := pruneFiles(t, site)
	start := time.Now()
	code, stdout, stderr := o.run(t, dir, "prune", "--grace", "0", "--lock-timeout", "300ms")
	if code != ExitFailure || !strings.Contains(stderr, layout.ErrLocked.Error()) || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("prune while a build publishes: exit %d, want %d saying the mirror is locked\n%s%s", code, ExitFailure, stdout, stderr)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Errorf("prune gave up after %s, before --lock-timeout", time.Since(start))
	}
	pruneSame(t, "after a locked-out prune", before, pruneFiles(t, site))
	if err := publisher.Close(); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := o.run(t, dir, "prune", "--grace", "0", "--lock-timeout", "300ms"); code != ExitOK {
		t.Errorf("prune once the build is done: exit %d\n%s%s", code, stdout, stderr)
	}
}

// Prune works the same on a bucket: through the store, under its
// exclusive lock, which a publisher's lease keeps it from taking.
func TestPruneBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.reg.Add("hashicorp", "foo", "2.0.0", "linux_amd64", "darwin_arm64")
	o.environ = append(o.environ, srv.Environ()...)
	o.environ = append(o.environ, "XDG_CACHE_HOME="+t.TempDir())
	dir := t.TempDir()
	bucket := srv.URI("mirror", "site/")
	writeManifest(t, dir, pruneManifest(o, ">= 1.0.0"))
	if code, stdout, stderr := o.run(t, dir, "build", "--out", bucket); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	writeManifest(t, dir, pruneManifest(o, "2.0.0"))
	objects := func() map[string]string {
		out := map[string]string{}
		listed, err := srv.Client(t).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("mirror"), Prefix: aws.String("site/")})
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range listed.Contents {
			key := strings.TrimPrefix(aws.ToString(obj.Key), "site/")
			if !strings.HasPrefix(key, layout.PrivateDirName+"/") {
				out[key] = aws.ToString(obj.ETag) + " " + aws.ToTime(obj.LastModified).String()
			}
		}
		return out
	}
	before := objects()

	// A publisher holds a lease and has written.
	publisher, err := s3store.New(t.Context(), bucket, s3store.Config{Environ: srv.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := publisher.Lock(t.Context(), time.Minute, layout.Publish)
	if err != nil {
		t.Fatal(err)
	}
	if err := publisher.Put(t.Context(), "being-published.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	before["being-published.json"] = objects()["being-published.json"]
	code, stdout, stderr := o.run(t, dir, "prune", "--out", bucket, "--grace", "0", "--lock-timeout", "300ms")
	if code != ExitFailure || !strings.Contains(stderr, "publishing") || !strings.Contains(stderr, "nothing was written") {
		t.Errorf("prune while a publisher writes: exit %d\n%s%s", code, stdout, stderr)
	}
	pruneSame(t, "after a locked-out prune", before, objects())
	if err := unlock(); err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr = o.run(t, dir, "prune", "--out", bucket, "--grace", "0")
	if code != ExitOK {
		t.Fatalf("prune: exit %d\n%s%s", code, stdout, stderr)
	}
	after := objects()
	for _, f := range pruneVersionFiles("1.0.0") {
		if _, ok := after[f]; ok {
			t.Errorf("%s is still in the bucket", f)
		}
	}
	for _, f := range pruneVersionFiles("2.0.0") {
		if after[f] != before[f] {
			t.Errorf("%s changed or disappeared", f)
		}
	}
	if code, stdout, stderr := o.run(t, dir, "verify", bucket); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("verify %s after prune: exit %d\n%s%s", bucket, code, stdout, stderr)
	}
}

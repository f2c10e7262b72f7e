package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// A directory, URL or prefix that holds no mirror is a wrong location,
// not a mirror without faults: verify says so and exits 2.
func TestVerifyRefusesWhatHoldsNoMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	dir := filepath.Dir(site)
	if code, stdout, stderr := o.run(t, dir, "verify", "site"); code != ExitOK {
		t.Fatalf("verify of the built mirror: exit %d\n%s%s", code, stdout, stderr)
	}
	other := filepath.Join(dir, "not-a-mirror")
	if err := os.MkdirAll(filepath.Join(other, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "docs", "index.html"), []byte("<p>hello</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, dir, "verify", "not-a-mirror")
	if code != ExitUsage || !strings.Contains(stderr, "not-a-mirror holds no mirror") || strings.Contains(stdout, "0 problems") {
		t.Errorf("verify of a directory without a mirror: exit %d, want %d naming it\n%s%s", code, ExitUsage, stdout, stderr)
	}
	// Every command that reads or rewrites a mirror says so, and writes
	// nothing there (replica wrote a registry replica and a page into it,
	// audit and prune reported a clean run of nothing).
	before := snapshot(t, other)
	for _, args := range [][]string{
		{"audit", "not-a-mirror", "--vulndb", tinyOSV(t)},
		{"replica", "not-a-mirror"},
		{"prune", "--out", "not-a-mirror", "--grace", "0"},
		{"build", "--from", "not-a-mirror", "--out", "elsewhere", "--dry-run"},
	} {
		code, stdout, stderr := o.run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(stderr, "not-a-mirror holds no mirror") {
			t.Errorf("%s: exit %d, want %d naming the directory\n%s%s", strings.Join(args, " "), code, ExitUsage, stdout, stderr)
		}
	}
	if after := snapshot(t, other); len(after) != len(before) {
		t.Errorf("the directory changed: %d entries, then %d", len(before), len(after))
	}

	// Over HTTP, without catalog.json, the providers to check come from
	// the manifest; without one, verify says how to name them.
	url := serveSite(t, &o, other, "application/json")
	code, stdout, stderr = o.run(t, t.TempDir(), "verify", url)
	if code != ExitUsage || !strings.Contains(stderr, url+" has no catalog.json") || !strings.Contains(stderr, "name the providers to check") {
		t.Errorf("verify %s without a manifest: exit %d, want %d saying how to name providers\n%s%s", url, code, ExitUsage, stdout, stderr)
	}
	// With a manifest naming foo, of which nothing is there either: no
	// mirror at all (a wrong URL), not a mirror lacking foo.
	code, stdout, stderr = o.run(t, dir, "verify", url)
	if code != ExitUsage || !strings.Contains(stderr, url+" holds no mirror") {
		t.Errorf("verify %s with the manifest naming foo: exit %d, want %d saying it holds no mirror\n%s%s", url, code, ExitUsage, stdout, stderr)
	}
	if err := os.Remove(filepath.Join(site, "catalog.json")); err != nil {
		t.Fatal(err)
	}
	url = serveSite(t, &o, site, "application/json")
	if code, stdout, stderr = o.run(t, dir, "verify", url); code != ExitOK || !strings.Contains(stdout, "1 provider") {
		t.Errorf("verify of the mirror over HTTP without its catalog, with the manifest: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A root module directory without configuration files is refused by
// every command that reads configurations, before anything is written:
// lock would leave an empty lock file there, prune drop what the right
// directory needs.
func TestDirectoryWithoutConfigurationIsRefused(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	dir := filepath.Dir(site)
	empty := filepath.Join(dir, "live", "app")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "README.md"), []byte("the configuration moved"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := pruneFiles(t, site)
	for _, args := range [][]string{
		{"lock", "--mirror", "site", "live/app"},
		{"lock", "--mirror", "site", "--check", "live/app"},
		{"prune", "live/app", "--out", "site", "--grace", "0"},
		{"build", "live/app", "--dry-run"},
	} {
		code, stdout, stderr := o.run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(stderr, "read configuration live/app: live/app: No configuration files") {
			t.Errorf("%s: exit %d, want %d naming the directory\n%s%s", strings.Join(args, " "), code, ExitUsage, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(empty, ".terraform.lock.hcl")); !os.IsNotExist(err) {
		t.Errorf("a lock file was written into the directory: %v", err)
	}
	// The mirror named where a configuration directory goes (a prune
	// would have read site as a configuration that needs nothing).
	code, stdout, stderr := o.run(t, dir, "prune", "site", "--grace", "0")
	if code != ExitUsage || !strings.Contains(stderr, "but is a mirror (it has .tfmirror)") || !strings.Contains(stderr, "--out") {
		t.Errorf("prune site: exit %d, want %d saying site is the mirror\n%s%s", code, ExitUsage, stdout, stderr)
	}
	pruneSame(t, "after the refused prunes", before, pruneFiles(t, site))
}

// A web root named as the destination by mistake loses nothing: a
// directory or bucket prefix whose index.html someone else wrote is
// refused (exit 2) before anything is downloaded or written, by every
// command that writes a tree.
func TestForeignPageIsNeverReplaced(t *testing.T) {
	srv := s3test.Start(t)
	o, dir, bucket := bucketAndSite(t, srv)
	const page = "<!DOCTYPE html><h1>the team's site</h1>"
	web := filepath.Join(dir, "www")
	if err := os.MkdirAll(web, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(web, "index.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "mirror.tar.gz")
	mustRun(t, o, dir, "bundle", "create", "site", "--out", bundle)
	putObject(t, srv, "mirror", "www/index.html", []byte(page))
	webBucket := srv.URI("mirror", "www/")
	for _, args := range [][]string{
		{"build", "--out", "www"},
		{"build", "--out", "www", "--dry-run"},
		{"build", "--out", webBucket},
		{"prune", "--out", "www"},
		{"bundle", "import", bundle, "--out", "www"},
		{"bundle", "import", bundle, "--out", webBucket},
	} {
		code, stdout, stderr := o.run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(stderr, "index.html was not written by tfmirror") {
			t.Errorf("%s: exit %d, want %d naming index.html\n%s%s", strings.Join(args, " "), code, ExitUsage, stdout, stderr)
		}
	}
	if got := snapshot(t, web); len(got) != 2 || got["index.html"] != page { // and "./"
		t.Errorf("the directory changed: %v", got)
	}
	if got := contents(bucketFiles(t, srv, "mirror", "www/")); len(got) != 1 || got["index.html"] != page {
		t.Errorf("the bucket prefix changed: %v", got)
	}
	// The mirror's own page is tfmirror's: building into it again works.
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site", "--out", bucket); code != ExitOK {
		t.Errorf("rebuild: exit %d\n%s%s", code, stdout, stderr)
	}
}

// bundle create --out naming a directory is refused before the mirror is
// read and packed (it failed at the end, renaming onto the directory).
func TestBundleCreateIntoADirectoryIsRefused(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	dir := filepath.Dir(site)
	out := filepath.Join(dir, "bundles")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, dir, "bundle", "create", "site", "--out", "bundles")
	if code != ExitUsage || !strings.Contains(stderr, "--out bundles is a directory") || !strings.Contains(stderr, "bundles/mirror.tar.gz") {
		t.Errorf("bundle create --out DIR: exit %d, want %d naming the directory\n%s%s", code, ExitUsage, stdout, stderr)
	}
	if got := snapshot(t, out); len(got) != 1 {
		t.Errorf("the directory changed: %v", got)
	}
}

// --out naming a file is refused before anything is planned or written.
func TestOutNamingAFileIsRefused(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	dir := filepath.Dir(site)
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"build", "--out", "notes.txt"}, {"prune", "--out", "notes.txt"}} {
		code, stdout, stderr := o.run(t, dir, args...)
		if code != ExitUsage || !strings.Contains(stderr, "notes.txt is a file, not a directory") {
			t.Errorf("%s: exit %d, want %d naming the file\n%s%s", strings.Join(args, " "), code, ExitUsage, stdout, stderr)
		}
	}
	if data, err := os.ReadFile(notes); err != nil || string(data) != "mine" {
		t.Errorf("the file holds %q (%v)", data, err)
	}
}

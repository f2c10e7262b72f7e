package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pagetest"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// runAt runs tfmirror in dir with the clock at at.
func (o origin) runAt(t *testing.T, dir string, at time.Time, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	wd, _ := os.Getwd()
	t.Chdir(dir)
	defer t.Chdir(wd)
	env := Env{Args: args, Stdout: &stdout, Stderr: &stderr, Environ: o.environ, now: func() time.Time { return at }}
	if code := Main(context.Background(), env); code != ExitOK {
		t.Fatalf("tfmirror %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// changeIndex reads a mirror directory's change index and checks each
// record it lists against it.
func changeIndex(t *testing.T, site string) layout.ChangeIndex {
	t.Helper()
	tree, err := layout.OpenExisting(site)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := tree.ReadChangeIndex(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if problems := tree.CheckChanges(t.Context()); len(problems) > 0 {
		t.Fatalf("change records of %s: %v", site, problems)
	}
	return idx
}

func readRecord(t *testing.T, site, rel string) layout.ChangeRecord {
	t.Helper()
	r, err := layout.DecodeChangeRecord(readFile(t, filepath.Join(site, filepath.FromSlash(rel))))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestChangeRecords follows a mirror through builds at chosen times: a
// first build whose releases the cool-down holds back, a no-op, a build
// that publishes, another no-op, a build of an older version and a prune. Each run that changes the
// mirror writes one signed record, listed newest first in the index, the
// feed and the page; a no-op writes no file at all.
func TestChangeRecords(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64")
	dir := t.TempDir()
	manifest := func(versions string) {
		writeManifest(t, dir, `platforms = ["linux_amd64"]
min_age = "7d"
provider "hashicorp/foo" {
  versions = "`+versions+`"
  newest   = 1
}
`+o.hostBlock("registry.opentofu.org"))
	}
	manifest(">= 1.0")
	key := pgptest.New(t, "operator")
	private, public := key.WriteFiles(t, t.TempDir(), "operator")
	site := filepath.Join(dir, "site")
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

	// Both versions are new and held back: a record says until when.
	o.runAt(t, dir, t0, "build", "--sign-key", private)
	idx := changeIndex(t, site)
	if len(idx.Records) != 1 || !idx.Records[0].Signed {
		t.Fatalf("index after the first build: %+v", idx)
	}
	first := readRecord(t, site, idx.Records[0].Path)
	if !first.Time.Equal(t0) || first.Command != "tfmirror build --sign-key" || !strings.HasPrefix(first.Tool, "tfmirror/") || len(first.Held) != 2 ||
		!first.Held[1].Until.Equal(t0.Add(7*24*time.Hour)) || !first.Held[1].New || len(first.Added) != 0 {
		t.Fatalf("first record: %+v", first)
	}
	if strings.Contains(first.Command, private) {
		t.Error("the record names the key file")
	}
	keys, err := signing.ReadTrustedKeys(readFile(t, public))
	if err != nil {
		t.Fatal(err)
	}
	recordPath := filepath.Join(site, filepath.FromSlash(idx.Records[0].Path))
	if _, err := keys.VerifyArmored(readFile(t, recordPath), readFile(t, recordPath+layout.ChangeSignatureSuffix)); err != nil {
		t.Errorf("the record's signature does not verify: %v", err)
	}

	// A day later nothing changed: no file is written.
	before := pruneFiles(t, site)
	o.runAt(t, dir, t0.Add(24*time.Hour), "build", "--sign-key", private)
	pruneSame(t, "after a no-op build", before, pruneFiles(t, site))

	// Eight days later the newest is published.
	o.runAt(t, dir, t0.Add(8*24*time.Hour), "build", "--sign-key", private)
	idx = changeIndex(t, site)
	if len(idx.Records) != 2 {
		t.Fatalf("index after publishing: %+v", idx)
	}
	added := readRecord(t, site, idx.Records[0].Path)
	want := []layout.ChangedPackage{{Package: "registry.opentofu.org/hashicorp/foo", Version: "1.1.0", Platforms: []string{"linux_amd64"}}}
	if !slices.EqualFunc(added.Added, want, func(a, b layout.ChangedPackage) bool {
		return a.Package == b.Package && a.Version == b.Version && slices.Equal(a.Platforms, b.Platforms)
	}) {
		t.Errorf("record of the build that published: %+v", added)
	}
	page := string(readFile(t, filepath.Join(site, "index.html")))
	feed := string(readFile(t, filepath.Join(site, layout.ChangeFeedPath)))
	for _, e := range idx.Records {
		if !strings.Contains(page, `data-record="`+e.Path+`"`) || !strings.Contains(feed, "urn:sha256:"+e.SHA256) {
			t.Errorf("%s is not on the page or in the feed", e.Path)
		}
	}

	// The same again: nothing written.
	before = pruneFiles(t, site)
	o.runAt(t, dir, t0.Add(8*24*time.Hour), "build", "--sign-key", private)
	pruneSame(t, "after a second no-op build", before, pruneFiles(t, site))

	// A prune of 1.1.0 is recorded too, once 1.0.0, which the manifest
	// now asks for, is built (a prune that would empty the provider is
	// refused).
	manifest("1.0.0")
	o.runAt(t, dir, t0.Add(9*24*time.Hour), "build", "--sign-key", private)
	o.runAt(t, dir, t0.Add(9*24*time.Hour+time.Hour), "prune", "--grace", "0", "--sign-key", private)
	idx = changeIndex(t, site)
	pruned := readRecord(t, site, idx.Records[0].Path)
	if len(idx.Records) != 4 || pruned.Command != "tfmirror prune --grace --sign-key" || len(pruned.Pruned) != 1 || pruned.Pruned[0].Version != "1.1.0" {
		t.Fatalf("record of the prune: %+v (index %+v)", pruned, idx)
	}
	// A prune with nothing to do writes nothing.
	before = pruneFiles(t, site)
	o.runAt(t, dir, t0.Add(10*24*time.Hour), "prune", "--grace", "0", "--sign-key", private)
	pruneSame(t, "after a no-op prune", before, pruneFiles(t, site))
}

// TestChangeRecordsThroughBundle: a bundle carries the records, the
// index and the feed; the importing mirror takes them (checked) and adds
// its own record of what the import added.
func TestChangeRecordsThroughBundle(t *testing.T) {
	o, dir := fooOrigin(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	o.runAt(t, dir, t0, "build")
	site := filepath.Join(dir, "site")
	upstream := changeIndex(t, site)
	if len(upstream.Records) != 1 {
		t.Fatalf("index of the built mirror: %+v", upstream)
	}
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	o.runAt(t, dir, t0.Add(time.Hour), "bundle", "create", site, "--out", file)

	into := filepath.Join(t.TempDir(), "mirror")
	o.runAt(t, t.TempDir(), t0.Add(2*time.Hour), "bundle", "import", file, "--out", into)
	idx := changeIndex(t, into)
	if len(idx.Records) != 2 || idx.Records[1].Path != upstream.Records[0].Path {
		t.Fatalf("index of the importing mirror: %+v", idx)
	}
	own := readRecord(t, into, idx.Records[0].Path)
	if own.Command != "tfmirror bundle import --out" || !own.Time.Equal(t0.Add(2*time.Hour)) || len(own.Added) != 1 || own.Added[0].Version != "1.0.0" {
		t.Errorf("the import's own record: %+v", own)
	}
	if !bytes.Equal(readFile(t, filepath.Join(into, filepath.FromSlash(upstream.Records[0].Path))), readFile(t, filepath.Join(site, filepath.FromSlash(upstream.Records[0].Path)))) {
		t.Error("the upstream record was not imported as it was")
	}
	verifyClean(t, o, into)

	// Importing the same bundle again changes nothing.
	before := pruneFiles(t, into)
	o.runAt(t, t.TempDir(), t0.Add(3*time.Hour), "bundle", "import", file, "--out", into)
	pruneSame(t, "after importing the same bundle again", before, pruneFiles(t, into))
}

// isChangeFile reports a file of a tree's change records (rel
// slash-separated): each run that changes a mirror adds its own record,
// with its time and command, so two mirrors of the same packages differ
// there.
func isChangeFile(rel string) bool {
	return rel == layout.ChangeFeedPath || strings.HasPrefix(rel, layout.ChangesDir+"/") || rel == layout.ChangesDir+"/"
}

// withoutChanges leaves out of files (by slash-separated path, with
// their content) the change records, and cuts the "Recent changes"
// section, which shows them, out of the catalog page.
func withoutChanges(files map[string]string) map[string]string {
	out := map[string]string{}
	for rel, content := range files {
		switch {
		case isChangeFile(rel):
		case rel == "index.html":
			out[rel] = pagetest.WithoutChanges(content)
		default:
			out[rel] = content
		}
	}
	return out
}

// newestRecord is the newest change record of a mirror directory.
func newestRecord(t *testing.T, site string) layout.ChangeRecord {
	t.Helper()
	idx := changeIndex(t, site)
	if len(idx.Records) == 0 {
		t.Fatalf("%s has no change record", site)
	}
	return readRecord(t, site, idx.Records[0].Path)
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// build --from copies a mirror into another destination without a request
// to the origin, making the same checks: the copy is byte for byte the
// source's tree; a source that keeps no provenance is refused.
func TestBuildFromMirror(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	before := len(o.reg.Requests())
	code, stdout, stderr := o.run(t, dir, "build", "--from", "site", "--out", "copy")
	if code != ExitOK || !strings.Contains(stdout, "2 mirrored") {
		t.Fatalf("build --from: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := len(o.reg.Requests()) - before; n != 0 {
		t.Errorf("build --from made %d requests to the origin", n)
	}
	diffSnapshots(t, publishedFiles(t, filepath.Join(dir, "site")), publishedFiles(t, filepath.Join(dir, "copy")))

	// A release without provenance (as another tool writes mirrors)
	// cannot be verified: refused, with nothing published.
	v, p := addrs.MustParseVersion("1.0.0"), addrs.MustParseProvider("hashicorp/foo")
	if err := os.Remove(filepath.Join(dir, "copy", filepath.FromSlash(layout.ProvenancePath(p, v)))); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = o.run(t, dir, "build", "--from", "copy", "--out", "copy2")
	if code == ExitOK || !strings.Contains(stdout+stderr, "provenance") {
		t.Errorf("build --from a mirror without provenance: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "copy2", filepath.FromSlash(layout.IndexPath(p)))); err == nil {
		t.Error("something was published from a release nothing can verify")
	}
	if code, stdout, stderr := o.run(t, dir, "build", "--from", "missing-site", "--out", "copy3"); code == ExitOK {
		t.Errorf("build --from a directory that is no mirror: exit 0\n%s%s", stdout, stderr)
	}
}

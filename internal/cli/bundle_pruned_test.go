package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A mirror pruned of every version of a provider keeps that provider's
// empty index.json (clients read "no versions" there); its bundle is
// imported like any other.
func TestBundleOfAPrunedMirror(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "bar", "1.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "hashicorp/bar" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	mustRun(t, o, dir, "build")
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	mustRun(t, o, dir, "prune") // files kept for the grace period
	site := filepath.Join(dir, "site")
	mustRun(t, o, dir, "verify", site)
	file := filepath.Join(dir, "b.tar.gz")
	mustRun(t, o, dir, "bundle", "create", site, "--out", file)
	dest := filepath.Join(t.TempDir(), "imported")
	code, stdout, stderr := o.run(t, dir, "bundle", "import", file, "--out", dest)
	if code != ExitOK {
		t.Fatalf("import of a pruned mirror's bundle: exit %d\n%s%s", code, stdout, stderr)
	}
	mustRun(t, o, dir, "verify", dest)
	if data, err := os.ReadFile(filepath.Join(dest, "registry.opentofu.org", "hashicorp", "foo", "index.json")); err != nil || !strings.Contains(string(data), "1.0.0") {
		t.Errorf("foo's index after the import: %v\n%s", err, data)
	}
}

// A mirror's findings are not carried by its bundle, and bundle create
// says why rather than calling vulnerabilities.json a stray file.
func TestBundleSaysFindingsAreNotCarried(t *testing.T) {
	o, dir := fooOrigin(t)
	mustRun(t, o, dir, "build", "--vulndb", tinyOSV(t))
	site := filepath.Join(dir, "site")
	if _, err := os.Stat(filepath.Join(site, "vulnerabilities.json")); err != nil {
		t.Fatalf("the build with --vulndb wrote no findings: %v", err)
	}
	out := mustRun(t, o, dir, "bundle", "create", site, "--out", filepath.Join(dir, "b.tar.gz"))
	if !strings.Contains(out, "skipped  vulnerabilities.json: bundles carry no findings; run tfmirror audit --vulndb") || strings.Contains(out, "no document refers to it") {
		t.Errorf("bundle create on findings:\n%s", out)
	}
}

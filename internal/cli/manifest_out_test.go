package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// The manifest's out attribute names the destinations of a build given
// no --out (directories relative to the manifest); --out wins over it.
func TestBuildOutFromManifest(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
out = ["from-manifest", "second"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, d := range []string{"from-manifest", "second"} {
		if _, err := os.Stat(filepath.Join(dir, d, "catalog.json")); err != nil {
			t.Errorf("the manifest's destination %s: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
		t.Errorf("the default ./site was written although the manifest names destinations: %v", err)
	}
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "flag"); code != ExitOK {
		t.Fatalf("build --out flag: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "flag", "catalog.json")); err != nil {
		t.Errorf("--out did not win over the manifest: %v", err)
	}
}

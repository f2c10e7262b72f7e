package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sbomFiles lists the SBOMs of a tree.
func sbomFiles(t *testing.T, site string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(site, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".cdx.json") {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// --no-sbom publishes the packages without SBOMs, and verify passes such
// a tree; the same build without it publishes one per package.
func TestBuildWithoutSBOM(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build", "--no-sbom"); code != ExitOK {
		t.Fatalf("build --no-sbom: exit %d\n%s%s", code, stdout, stderr)
	}
	site := filepath.Join(dir, "site")
	if got := sbomFiles(t, site); len(got) != 0 {
		t.Fatalf("build --no-sbom published SBOMs: %v", got)
	}
	if code, stdout, stderr := o.run(t, dir, "verify", site); code != ExitOK {
		t.Fatalf("verify of a tree without SBOMs: exit %d\n%s%s", code, stdout, stderr)
	}
	other := t.TempDir()
	writeManifest(t, other, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, other, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := sbomFiles(t, filepath.Join(other, "site")); len(got) != 2 {
		t.Fatalf("a build publishes %d SBOMs for 2 packages, want 2: %v", len(got), got)
	}
}

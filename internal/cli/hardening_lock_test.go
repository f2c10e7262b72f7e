package cli

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
)

// tfmirror lock must not copy an h1: from a forged provenance record into
// a lock file: the record is not signed. It exits 3 and writes nothing,
// as verify does.
func TestLockRefusesForgedProvenance(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	rel := filepath.FromSlash("registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_provenance.json")
	data, err := os.ReadFile(filepath.Join(site, rel))
	if err != nil {
		t.Fatal(err)
	}
	prov, err := layout.DecodeProvenance(data)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(data), string(prov.Archives["linux_amd64"].H1), string(prov.Archives["darwin_arm64"].H1), 1)
	if err := os.WriteFile(filepath.Join(site, rel), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	module := fooRootModule(t)
	code, stdout, stderr := o.run(t, module, "lock", "--mirror", site, "--platform", "linux_amd64")
	if code != ExitVerification || !strings.Contains(stdout+stderr, "provenance record says") {
		t.Errorf("exit %d, want %d naming the forged record\n%s%s", code, ExitVerification, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(module, ".terraform.lock.hcl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was written from a forged provenance record (%v)", err)
	}
}

// fooRootModule is a root module that requires hashicorp/foo 1.0.0.
func fooRootModule(t *testing.T) string {
	t.Helper()
	module := t.TempDir()
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(`terraform {
  required_providers {
    foo = { source = "hashicorp/foo", version = "1.0.0" }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return module
}

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
    foo = { source = "registry.opentofu.org/hashicorp/foo", version = "1.0.0" }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return module
}

// A mirror whose version document lists a hash its package does not have
// makes every init through it fail (the client checks the package
// against the hashes listed), whatever the lock file says: lock and lock
// --check say so (exit 3) rather than pass a lock file init cannot use.
func TestLockRefusesAListingInitFailsOn(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	doc := filepath.Join(site, filepath.FromSlash("registry.opentofu.org/hashicorp/foo/1.0.0.json"))
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := layout.DecodeVersion(data)
	if err != nil {
		t.Fatal(err)
	}
	wrong := "h1:" + strings.Repeat("A", 43) + "="
	for _, h := range v.Archives["linux_amd64"].Hashes {
		data = []byte(strings.Replace(string(data), string(h), wrong, 1))
	}
	if err := os.WriteFile(doc, data, 0o644); err != nil {
		t.Fatal(err)
	}
	module := fooRootModule(t)
	for _, args := range [][]string{
		{"lock", "--mirror", site, "--platform", "linux_amd64"},
		{"lock", "--check", "--mirror", site, "--platform", "linux_amd64"},
	} {
		code, stdout, stderr := o.run(t, module, args...)
		if code != ExitVerification || !strings.Contains(stdout+stderr, wrong) || !strings.Contains(stdout+stderr, "init through the mirror fails") {
			t.Errorf("%v: exit %d, want %d naming the hash listed\n%s%s", args, code, ExitVerification, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(module, ".terraform.lock.hcl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock file was written (%v)", err)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bothRegistriesSite builds a mirror of hashicorp/foo 1.0.0 and 1.1.0 from
// registry.opentofu.org and from registry.terraform.io (one origin serves
// both hosts).
func bothRegistriesSite(t *testing.T, o origin) string {
	t.Helper()
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64")
	return siteOf(t, o, `platforms = ["linux_amd64"]
provider "registry.opentofu.org/hashicorp/foo" { versions = ">= 1.0.0" }
provider "registry.terraform.io/hashicorp/foo" { versions = ">= 1.0.0" }
`+o.hostBlock("registry.opentofu.org")+o.hostBlock("registry.terraform.io"))
}

// terraformLocked is a root module requiring "hashicorp/foo" without a
// host, locked by lock --client terraform from bothRegistriesSite.
func terraformLocked(t *testing.T) (origin, string, string) {
	t.Helper()
	o := newOrigin(t)
	site := bothRegistriesSite(t, o)
	module := hostlessModule(t)
	if code, stdout, stderr := o.run(t, module, "lock", "--mirror", site, "--client", "terraform"); code != ExitOK {
		t.Fatalf("lock --client terraform: exit %d\n%s%s", code, stdout, stderr)
	}
	return o, site, module
}

// hostlessModule is a root module that requires "hashicorp/foo" ~> 1.0,
// without a host.
func hostlessModule(t *testing.T) string {
	t.Helper()
	module := t.TempDir()
	writeFile(t, filepath.Join(module, "main.tf"), []byte("terraform {\n  required_providers {\n    foo = { source = \"hashicorp/foo\", version = \"~> 1.0\" }\n  }\n}\n"))
	return module
}

// With --client terraform alone, lock reads a source without a host as
// Terraform does (registry.terraform.io): it writes that provider's lock,
// --check passes the file and --fix keeps it. OpenTofu's reading of the
// same file (the default) flags it: tofu init moves the lock to
// registry.opentofu.org.
func TestLockForTerraformReadsSourcesWithoutAHostAsTerraform(t *testing.T) {
	o, site, module := terraformLocked(t)
	lock := string(readLock(t, module))
	if !strings.Contains(lock, `provider "registry.terraform.io/hashicorp/foo"`) || strings.Contains(lock, "registry.opentofu.org") || !strings.Contains(lock, `version     = "1.1.0"`) {
		t.Fatalf("lock --client terraform wrote:\n%s", lock)
	}
	if code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--client", "terraform"); code != ExitOK {
		t.Errorf("lock --check --client terraform of the file it wrote: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := o.run(t, module, "lock", "--fix", "--mirror", site, "--client", "terraform"); code != ExitOK || string(readLock(t, module)) != lock {
		t.Errorf("lock --fix --client terraform: exit %d, want 0 and the file kept\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--client", "tofu"); code != ExitFailure || !strings.Contains(stdout, "registry.opentofu.org/hashicorp/foo") {
		t.Errorf("lock --check --client tofu: exit %d, want 1 naming registry.opentofu.org/hashicorp/foo\n%s%s", code, stdout, stderr)
	}
}

// A file Terraform keeps for a source without a host, against a mirror
// that holds only registry.opentofu.org's provider: --check --client
// terraform fails it naming the provider Terraform reads, and --fix
// leaves it as it is and exits 1 (it cannot write a file Terraform keeps).
func TestLockFixForTerraformLeavesWhatItCannotFix(t *testing.T) {
	o, site, module := terraformLocked(t)
	lock := string(readLock(t, module))
	if err := os.RemoveAll(filepath.Join(site, "registry.terraform.io")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--client", "terraform")
	if code != ExitFailure || !strings.Contains(stdout, "reads as registry.terraform.io/hashicorp/foo, and the mirror does not hold that provider") {
		t.Errorf("lock --check --client terraform: exit %d, want 1 with a terraform-host finding\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = o.run(t, module, "lock", "--fix", "--mirror", site, "--client", "terraform", "--json")
	if code != ExitFailure || string(readLock(t, module)) != lock {
		t.Errorf("lock --fix --client terraform: exit %d, want 1 and the file left as it was\n%s%s\n%s", code, stdout, stderr, readLock(t, module))
	}
}

// OpenTofu takes a file Terraform wrote (registry.terraform.io/hashicorp/foo
// 1.0.0) as pinning registry.opentofu.org/hashicorp/foo to the same
// version: lock keeps 1.0.0, though ~> 1.0 allows 1.1.0.
func TestLockKeepsTheVersionTerraformPinned(t *testing.T) {
	o, site, module := terraformLocked(t)
	writeLock(t, module, strings.Replace(string(readLock(t, module)), `version     = "1.1.0"`, `version     = "1.0.0"`, 1))
	if code, stdout, stderr := o.run(t, module, "lock", "--mirror", site); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s%s", code, stdout, stderr)
	}
	lock := string(readLock(t, module))
	if !strings.Contains(lock, `provider "registry.opentofu.org/hashicorp/foo"`) || !strings.Contains(lock, `version     = "1.0.0"`) {
		t.Errorf("lock of a file pinning registry.terraform.io/hashicorp/foo 1.0.0 wrote:\n%s", lock)
	}
}

// --via oci_mirror for Terraform alone is refused: it has no such method.
func TestLockCheckOCIForTerraformRefused(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, _ := lockedModule(t, o, site)
	code, _, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--client", "terraform", "--via", "oci_mirror")
	if code != ExitUsage || !strings.Contains(stderr, "Terraform has no oci_mirror") {
		t.Errorf("exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
}

// Without a lock file, a Terraform-only check of a source without a host
// that the mirror holds only on registry.opentofu.org says init fails, as
// it does with one: not that init writes one.
func TestLockCheckForTerraformWithoutALockFile(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module := hostlessModule(t)
	code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--client", "terraform")
	if code != ExitFailure || !strings.Contains(stdout, "fails") || !strings.Contains(stdout, "the mirror does not hold that provider") || strings.Contains(stdout, "init writes one") {
		t.Errorf("exit %d, want 1 and init failing\n%s%s", code, stdout, stderr)
	}
}

// --via oci_mirror with Terraform named beside OpenTofu is refused too:
// Terraform cannot install that way at all.
func TestLockCheckOCIForBothClientsRefused(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, _ := lockedModule(t, o, site)
	code, _, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--client", "tofu", "--client", "terraform", "--via", "oci_mirror")
	if code != ExitUsage || !strings.Contains(stderr, "Terraform has no oci_mirror") {
		t.Errorf("exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
}

// A registry.terraform.io/hashicorp lock taken for OpenTofu's provider is
// named as the file writes it when it cannot be installed.
func TestLockNamesTheTerraformPinItTook(t *testing.T) {
	o, site, module := terraformLocked(t)
	writeLock(t, module, strings.Replace(string(readLock(t, module)), `version     = "1.1.0"`, `version     = "0.9.0"`, 1))
	code, stdout, stderr := o.run(t, module, "lock", "--mirror", site)
	want := "the lock file pins registry.terraform.io/hashicorp/foo 0.9.0 (taken for registry.opentofu.org/hashicorp/foo, as OpenTofu does)"
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d saying %q\n%s%s", code, ExitUsage, want, stdout, stderr)
	}
}

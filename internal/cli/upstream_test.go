package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildFromUpstreams routes providers by the manifest's
// provider_installation block: hashicorp/foo from a mirror already built
// (its kept SHA256SUMS and signature checked as the origin's), everything
// else from the origin. The mirror's foo archive never comes from the
// origin; a tampered upstream mirror is refused with exit 3.
func TestBuildFromUpstreams(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "bar", "2.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "upstream"); code != ExitOK {
		t.Fatalf("build the upstream: exit %d\n%s%s", code, stdout, stderr)
	}

	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "hashicorp/bar" { versions = "2.0.0" }

provider_installation {
  network_mirror {
    url     = "upstream"
    include = ["registry.opentofu.org/hashicorp/foo"]
  }
  direct {
    exclude = ["registry.opentofu.org/hashicorp/foo"]
  }
}
`+o.hostBlock("registry.opentofu.org"))
	before := o.reg.Requests()
	code, stdout, stderr := o.run(t, dir, "build", "--out", "site")
	if code != ExitOK || !strings.Contains(stdout, "2 mirrored") {
		t.Fatalf("build from upstreams: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, r := range o.reg.Requests()[len(before):] {
		if strings.Contains(r, "/foo/") || strings.Contains(r, "provider-foo") {
			t.Errorf("the origin was asked for foo, which the upstream mirror serves: %s", r)
		}
	}
	for _, f := range []string{"registry.opentofu.org/hashicorp/foo/1.0.0.json", "registry.opentofu.org/hashicorp/bar/2.0.0.json"} {
		if _, err := os.Stat(filepath.Join(dir, "site", filepath.FromSlash(f))); err != nil {
			t.Errorf("the mirror lacks %s: %v", f, err)
		}
	}

	// A tampered upstream: its kept SHA256SUMS no longer verifies.
	sums := filepath.Join(dir, "upstream", "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_SHA256SUMS")
	data, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	data[0] ^= 1
	if err := os.WriteFile(sums, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site2"); code != ExitVerification {
		t.Fatalf("build from a tampered upstream: exit %d, want 3\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "site2", "registry.opentofu.org", "hashicorp", "foo", "1.0.0.json")); !os.IsNotExist(err) {
		t.Errorf("the tampered package was published: %v", err)
	}

	// A provider no method takes.
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/bar" { versions = "2.0.0" }
provider_installation {
  network_mirror {
    url     = "upstream"
    include = ["registry.opentofu.org/hashicorp/foo"]
  }
}
`)
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site3"); code != ExitUsage || !strings.Contains(stdout+stderr, "no upstream of the manifest's provider_installation block takes registry.opentofu.org/hashicorp/bar") {
		t.Errorf("a provider no method takes: exit %d\n%s%s", code, stdout, stderr)
	}
}

package cli

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
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

// TestBuildFromFilesystemMirrors reads packed and unpacked filesystem
// mirrors that keep nothing but the packages (tfmirror's layouts with
// their .tfmirror directory removed, which is what OpenTofu reads): the
// packages are mirrored with a warning that only hashes vouch for them,
// the result verifies and locks, and --require-signatures refuses them
// with exit 3, publishing nothing.
func TestBuildFromFilesystemMirrors(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	for _, layout := range []string{"packed", "unpacked"} {
		if code, stdout, stderr := o.run(t, dir, "build", "--layout", layout, "--out", layout); code != ExitOK {
			t.Fatalf("build the %s mirror: exit %d\n%s%s", layout, code, stdout, stderr)
		}
		if err := os.RemoveAll(filepath.Join(dir, layout, ".tfmirror")); err != nil {
			t.Fatal(err)
		}
	}
	want := sha256OfFile(t, filepath.Join(dir, "packed", "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_linux_amd64.zip"))
	for _, c := range []struct{ kind, attr, path string }{
		{"filesystem_mirror", "path", "packed"},
		{"filesystem_mirror", "path", "unpacked"},
		{"network_mirror", "url", "packed"}, // a directory: a packed filesystem mirror too
	} {
		t.Run(c.kind+" "+c.path, func(t *testing.T) {
			writeManifest(t, dir, fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider_installation {
  %s { %s = %q }
}
`, c.kind, c.attr, c.path))
			out := "site-" + c.kind + "-" + c.path
			code, stdout, stderr := o.run(t, dir, "build", "--out", out, "--require-signatures")
			if code != ExitVerification || !strings.Contains(stdout+stderr, "hashes only") {
				t.Fatalf("--require-signatures: exit %d, want 3 and a refusal saying hashes only\n%s%s", code, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, out, "registry.opentofu.org", "hashicorp", "foo", "index.json")); !os.IsNotExist(err) {
				t.Errorf("a refused package was published: %v", err)
			}
			code, stdout, stderr = o.run(t, dir, "build", "--out", out)
			if code != ExitOK || !strings.Contains(stdout, "2 mirrored") || !strings.Contains(stdout+stderr, "keeps no signature, so only its hashes vouch") || !strings.Contains(stdout, "hashes only)") {
				t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
			}
			if code, stdout, stderr := o.run(t, dir, "verify", out); code != ExitOK {
				t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
			}
			got := sha256OfFile(t, filepath.Join(dir, out, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_linux_amd64.zip"))
			if c.path == "packed" && got != want {
				t.Errorf("the packed zip was not mirrored byte for byte")
			}
		})
	}

	// lock reads the filesystem mirrors too, with the same verdict; the
	// h1: it records are the ones the mirror built from them publishes.
	module := fooRootModule(t)
	for _, fsm := range []string{"packed", "unpacked"} {
		code, stdout, stderr := o.run(t, module, "lock", "--mirror", filepath.Join(dir, fsm), "--require-signatures")
		if code != ExitVerification || !strings.Contains(stdout+stderr, "hashes only") {
			t.Fatalf("lock --require-signatures from %s: exit %d, want 3\n%s%s", fsm, code, stdout, stderr)
		}
		if code, stdout, stderr := o.run(t, module, "lock", "--mirror", filepath.Join(dir, fsm)); code != ExitOK {
			t.Fatalf("lock from %s: exit %d\n%s%s", fsm, code, stdout, stderr)
		}
		lock, err := os.ReadFile(filepath.Join(module, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := os.ReadFile(filepath.Join(dir, "site-filesystem_mirror-"+fsm, "registry.opentofu.org", "hashicorp", "foo", "1.0.0.json"))
		if err != nil {
			t.Fatal(err)
		}
		vd, err := layout.DecodeVersion(doc)
		if err != nil {
			t.Fatal(err)
		}
		for plat, a := range vd.Archives {
			for _, h := range a.Hashes {
				if !strings.Contains(string(lock), string(h)) {
					t.Errorf("lock from %s lacks %s's %s:\n%s", fsm, plat, h, lock)
				}
			}
		}
	}
}

func sha256OfFile(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

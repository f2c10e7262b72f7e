package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// replicaFixture is a fake registry (signed hashicorp/foo, unsigned
// hashicorp/bar) and a `tfmirror build --registry-replica` of it.
type replicaFixture struct {
	ca   *testca.CA
	reg  *fakeregistry.Registry
	env  []string
	site string
	foo  pkgVersion
	bar  pkgVersion
}

func newReplicaFixture(t *testing.T) *replicaFixture {
	t.Helper()
	f := &replicaFixture{
		ca:  testca.New(t),
		foo: pkgVersion{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
		bar: pkgVersion{host: "registry.opentofu.org", ns: "hashicorp", typ: "bar", version: "0.1.0", platforms: []string{"linux_amd64", "darwin_arm64"}, dirEntries: true},
	}
	f.reg = fakeregistry.New(t, f.ca)
	f.reg.Add(f.foo.ns, f.foo.typ, f.foo.version, f.foo.platforms...)
	f.reg.AddWithOptions(f.bar.ns, f.bar.typ, f.bar.version, fakeregistry.Options{Unsigned: true, DirEntries: true}, f.bar.platforms...)
	f.env = caFileEnv(t, f.ca)
	work := t.TempDir()
	f.site = filepath.Join(work, "site")
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/foo" {
  versions = "1.0.0"
}

provider "hashicorp/bar" {
  versions = "0.1.0"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, f.reg.ServicesURL))
	stdout, stderr, code := runTfmirror(t, work, f.env, "build", "--registry-replica")
	if code != 0 || !strings.Contains(stdout, "registry replica in ") {
		t.Fatalf("tfmirror build --registry-replica: exit %d, want 0 and a replica\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return f
}

// hostCLI is a CLI configuration with nothing but a host block: tofu
// installs directly (no provider_installation block) from the registry at
// servicesURL.
func hostCLI(servicesURL string) string {
	return fmt.Sprintf("host \"registry.opentofu.org\" {\n  services = { \"providers.v1\" = %q }\n}\n", servicesURL)
}

var installedLineRe = regexp.MustCompile(`(?m)^- Installed .*$`)

// initDirect runs `tofu init` for the providers in main.tf with the given
// CLI configuration and returns the output, the "- Installed" lines and
// the lock file.
func initDirect(t *testing.T, f *replicaFixture, bin, cli, mainTF string, extraEnv ...string) (out string, installed []string, lock []byte, err error) {
	t.Helper()
	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), mainTF)
	out, err = runTofu(t, bin, wd, cli, append(slices.Clone(f.env), extraEnv...), "init", "-input=false")
	installed = installedLineRe.FindAllString(out, -1)
	slices.Sort(installed)
	lock, _ = os.ReadFile(filepath.Join(wd, ".terraform.lock.hcl"))
	return out, installed, lock, err
}

const replicaMainTF = `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.0.0"
    }
    bar = {
      source  = "hashicorp/bar"
      version = "0.1.0"
    }
  }
}
`

// TestReplicaInstallsWithSignatureVerification serves a mirror built with
// --registry-replica with nginx and installs from it with real tofu through
// a CLI-config host block only: tofu reads the replica's versions and
// download documents, fetches the kept SHA256SUMS and signature and checks
// the signature against the key the document advertises, exactly as from
// the origin: same output, byte-identical lock file. A replica whose
// signature was tampered with fails the install.
func TestReplicaInstallsWithSignatureVerification(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	tofu := tofuBin(t)
	f := newReplicaFixture(t)
	base := startNginx(t, f.site, f.ca)
	replicaURL := base + "replica/registry.opentofu.org/v1/providers/"

	// A plain static host: the extensionless versions and download
	// documents go out as nginx's default type, which tofu accepts.
	checkServed(t, f.ca, replicaURL+"hashicorp/foo/versions", "application/octet-stream", nil)
	checkServed(t, f.ca, replicaURL+"hashicorp/foo/1.0.0/download/linux/amd64", "application/octet-stream", nil)

	// The reference: the same install from the origin.
	_, wantInstalled, wantLock, err := initDirect(t, f, tofu, hostCLI(f.reg.ServicesURL), replicaMainTF)
	if err != nil {
		t.Fatalf("tofu init from the origin: %v", err)
	}

	before := len(f.reg.Requests())
	out, installed, lock, err := initDirect(t, f, tofu, hostCLI(replicaURL), replicaMainTF, "TF_LOG=debug")
	if err != nil {
		t.Fatalf("tofu init from the replica: %v\n%s", err, out)
	}
	if reqs := f.reg.Requests(); len(reqs) != before {
		t.Errorf("the origin was contacted during init from the replica: %q", reqs[before:])
	}

	// Verified by signature, by the origin's key.
	signed := "- Installed hashicorp/foo v1.0.0 (signed, key ID " + f.reg.KeyID + ")"
	if !slices.Contains(installed, signed) {
		t.Errorf("init output lacks %q; installed lines %q", signed, installed)
	}
	for _, s := range []string{
		"Validating GPG signature of provider package",
		"Provider signed by " + f.reg.KeyID,
		replicaURL + "hashicorp/foo/1.0.0/download/" + strings.Replace(plat, "_", "/", 1),
	} {
		if !strings.Contains(out, s) {
			t.Errorf("tofu's debug log lacks %q", s)
		}
	}
	// The unsigned bar is installed as the origin serves it: no keys, so
	// tofu skips the signature for registry.opentofu.org.
	if !strings.Contains(out, "Skipping GPG validation of provider package") {
		t.Errorf("tofu's debug log does not show the signature check skipped for the unsigned bar")
	}
	if !slices.Equal(installed, wantInstalled) {
		t.Errorf("installed lines from the replica %q, from the origin %q", installed, wantInstalled)
	}

	// The lock file: what the origin gives (h1 of the installed package
	// and a zh for every line of the signed SHA256SUMS) and, from the
	// replica's OpenTofu 1.12 "packages" field, every other platform's h1.
	wd := t.TempDir()
	lockPath := filepath.Join(wd, ".terraform.lock.hcl")
	writeFile(t, lockPath, string(wantLock))
	originHashes := parseLockFile(t, lockPath)
	writeFile(t, lockPath, string(lock))
	replicaHashes := parseLockFile(t, lockPath)
	for addr, hashes := range originHashes {
		for _, h := range hashes {
			if !slices.Contains(replicaHashes[addr], h) {
				t.Errorf("the lock file from the replica lacks %s %s, which the origin's has:\n%s", addr, h, lineDiff(string(wantLock), string(lock)))
			}
		}
	}
	fooHashes := replicaHashes["registry.opentofu.org/hashicorp/foo"]
	var wantHashes []string
	for _, p := range f.foo.platforms {
		wantHashes = append(wantHashes, dirHashOfArchive(t, f.reg.Archive("hashicorp", "foo", "1.0.0", p)))
	}
	for _, line := range strings.Split(strings.TrimSpace(string(f.reg.SHA256SUMS("hashicorp", "foo", "1.0.0"))), "\n") {
		wantHashes = append(wantHashes, "zh:"+strings.Fields(line)[0])
	}
	slices.Sort(wantHashes)
	got := slices.Sorted(slices.Values(fooHashes))
	if !slices.Equal(got, wantHashes) {
		t.Errorf("lock file hashes for foo %q, want %q", got, wantHashes)
	}

	t.Run("tofu 1.10", func(t *testing.T) {
		old := oldTofuBin(t)
		out, installed, _, err := initDirect(t, f, old, hostCLI(replicaURL), replicaMainTF)
		if err != nil {
			t.Fatalf("tofu 1.10 init from the replica: %v\n%s", err, out)
		}
		if !slices.Contains(installed, signed) {
			t.Errorf("tofu 1.10 init output lacks %q; installed lines %q", signed, installed)
		}
	})

	t.Run("tampered signature", func(t *testing.T) {
		tampered := filepath.Join(t.TempDir(), "site")
		copyTree(t, f.site, tampered)
		sig := filepath.Join(tampered, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_SHA256SUMS.sig")
		data, err := os.ReadFile(sig)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-1] ^= 1
		writeFile(t, sig, string(data))
		base2 := startNginx(t, tampered, f.ca)

		out, _, lock, err := initDirect(t, f, tofu, hostCLI(base2+"replica/registry.opentofu.org/v1/providers/"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.0.0"
    }
  }
}
`)
		if err == nil {
			t.Fatalf("tofu init from a replica with a tampered signature succeeded:\n%s", out)
		}
		// tofu wraps its error messages at 78 columns.
		if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, "the provider is not signed with a valid signing key") ||
			!strings.Contains(flat, "invalid signature") {
			t.Errorf("tofu init failed without a signature error:\n%s", out)
		}
		if len(lock) != 0 {
			t.Errorf("tofu wrote a lock file:\n%s", lock)
		}
	})
}

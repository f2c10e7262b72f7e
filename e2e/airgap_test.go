package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestAirGappedWalkthrough runs docs/airgap.md's walkthrough as
// written: build with lock files, bundle, (carry), import, verify, serve
// with a generated CA, tofu init -lockfile=readonly; then the filesystem
// mirror variant. Only the origin differs: a local registry.
func TestAirGappedWalkthrough(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	f := newFixture(t, mainFixturePackages, mainManifest)
	connected := f.work
	writeFile(t, filepath.Join(connected, "live", "app", "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "~> 1.0"
    }
  }
}
`)
	run := func(dir string, env []string, args ...string) {
		t.Helper()
		if stdout, stderr, code := runTfmirror(t, dir, env, args...); code != 0 {
			t.Fatalf("tfmirror %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
	}
	// Connected side.
	run(connected, f.env, "build", "--config", "mirror.hcl", "--out", "site", "live/app", "--write-lock-files")
	run(connected, f.env, "bundle", "create", "site", "--out", "mirror-bundle.tar.gz", "--lock-files", "live/app")
	bundle, err := os.ReadFile(filepath.Join(connected, "mirror-bundle.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bundle)

	// Air-gapped side: a fresh directory, and no more requests to the origin.
	gapped := t.TempDir()
	writeFile(t, filepath.Join(gapped, "mirror-bundle.tar.gz"), string(bundle))
	if got := sha256.Sum256(bundle); hex.EncodeToString(got[:]) != hex.EncodeToString(sum[:]) {
		t.Fatal("the bundle changed on the way")
	}
	requests := len(f.reg.Requests())
	srv := filepath.Join(gapped, "srv", "tfmirror")
	run(gapped, nil, "bundle", "import", "mirror-bundle.tar.gz", "--out", srv, "--extras", "bundle-extras")
	run(gapped, nil, "verify", srv)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startTfmirror(t, gapped, nil, "serve", srv, "--listen", addr, "--hostname", "127.0.0.1", "--ca-out", "mirror-ca.pem")
	waitForTLS(t, addr)

	lock := filepath.Join(gapped, "bundle-extras", "lock-files", "live", "app", ".terraform.lock.hcl")
	lockBytes, err := os.ReadFile(lock)
	if err != nil {
		t.Fatalf("the bundle did not carry the lock file: %v", err)
	}
	tofuEnv := []string{"SSL_CERT_FILE=" + filepath.Join(gapped, "mirror-ca.pem")}
	for _, variant := range []struct{ name, cli string }{
		{"network mirror via tfmirror serve", mirrorOnlyCLI("https://" + addr + "/")},
		{"unpacked filesystem mirror", ""},
	} {
		t.Run(variant.name, func(t *testing.T) {
			cli := variant.cli
			if cli == "" {
				opt := filepath.Join(gapped, "opt", "tfmirror")
				run(gapped, nil, "bundle", "import", "mirror-bundle.tar.gz", "--out", opt, "--layout", "unpacked")
				cli = fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", opt)
			}
			wd := t.TempDir()
			writeFile(t, filepath.Join(wd, "main.tf"), string(mustRead(t, filepath.Join(connected, "live", "app", "main.tf"))))
			writeFile(t, filepath.Join(wd, ".terraform.lock.hcl"), string(lockBytes))
			out, err := runTofu(t, tofuBin(t), wd, cli, tofuEnv, "init", "-input=false", "-lockfile=readonly")
			if err != nil {
				t.Fatalf("tofu init -lockfile=readonly: %v\n%s", err, out)
			}
			if got := mustRead(t, filepath.Join(wd, ".terraform.lock.hcl")); string(got) != string(lockBytes) {
				t.Errorf("tofu changed the lock file the bundle carried")
			}
			if _, err := os.Stat(filepath.Join(wd, ".terraform", "providers", "registry.opentofu.org", "hashicorp", "foo", "1.1.0", plat)); err != nil {
				t.Errorf("foo 1.1.0 was not installed: %v", err)
			}
		})
	}
	if extra := f.reg.Requests()[requests:]; len(extra) != 0 {
		t.Errorf("the air-gapped side contacted the origin: %q", extra)
	}

	// A later bundle with a new provider merges into the served mirror.
	f.reg.Add("hashicorp", "qux", "3.0.0", "linux_amd64", "darwin_arm64")
	writeFile(t, filepath.Join(connected, "later.hcl"), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/qux" {
  versions = "3.0.0"
}
host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, f.reg.ServicesURL))
	run(connected, f.env, "build", "--config", "later.hcl", "--out", "later-site")
	run(connected, f.env, "bundle", "create", "later-site", "--out", "later-bundle.tar.gz")
	writeFile(t, filepath.Join(gapped, "later-bundle.tar.gz"), string(mustRead(t, filepath.Join(connected, "later-bundle.tar.gz"))))
	run(gapped, nil, "bundle", "import", "later-bundle.tar.gz", "--out", srv)
	run(gapped, nil, "verify", srv)
	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source = "hashicorp/foo"
    }
    qux = {
      source = "hashicorp/qux"
    }
  }
}
`)
	cli := mirrorOnlyCLI("https://" + addr + "/")
	if out, err := runTofu(t, tofuBin(t), wd, cli, tofuEnv, "init", "-input=false"); err != nil {
		t.Fatalf("tofu init from the merged mirror: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

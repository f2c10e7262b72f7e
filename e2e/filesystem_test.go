package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTofuInstallsFromFilesystemMirrors builds packed and unpacked
// filesystem mirrors and installs from each with a filesystem_mirror only,
// including a provider on an internationalized hostname (a Unicode
// directory there, unlike the punycode of a network mirror).
func TestTofuInstallsFromFilesystemMirrors(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	pkgs := []pkgVersion{
		{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.1.0", platforms: threePlatforms},
		{host: "registry.opentofu.org", ns: "hashicorp", typ: "bar", version: "0.1.0", platforms: []string{"linux_amd64", "darwin_arm64"}, dirEntries: true},
		{host: "bücher.example", ns: "acme", typ: "idn", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
	}
	manifest := func(servicesURL string) string {
		return fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/foo" {
  versions = "1.1.0"
}

provider "hashicorp/bar" {
  versions = "0.1.0"
}

provider "bücher.example/acme/idn" {
  versions = "1.0.0"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %[1]q }
}

host "bücher.example" {
  services = { "providers.v1" = %[1]q }
}
`, servicesURL)
	}
	config := `terraform {
  required_providers {
    foo = {
      source = "hashicorp/foo"
    }
    bar = {
      source = "hashicorp/bar"
    }
    idn = {
      source = "bücher.example/acme/idn"
    }
  }
}
`
	for _, kind := range []string{"packed", "unpacked"} {
		t.Run(kind, func(t *testing.T) {
			f := newFixture(t, pkgs, manifest)
			out := filepath.Join(f.work, kind)
			stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", "mirror.hcl", "--out", kind, "--layout", kind)
			if code != 0 {
				t.Fatalf("build --layout %s: exit %d\n%s%s", kind, code, stdout, stderr)
			}
			idn := filepath.Join(out, "bücher.example", "acme", "idn")
			want := filepath.Join(idn, "terraform-provider-idn_1.0.0_linux_amd64.zip")
			if kind == "unpacked" {
				want = filepath.Join(idn, "1.0.0", "linux_amd64", "terraform-provider-idn_v1.0.0")
			}
			if _, err := os.Stat(want); err != nil {
				t.Errorf("the %s mirror lacks %s: %v", kind, want, err)
			}
			if _, err := os.Stat(filepath.Join(out, "xn--bcher-kva.example")); !os.IsNotExist(err) {
				t.Errorf("a punycode directory was written where OpenTofu only reads Unicode ones: %v", err)
			}
			// The network tree behind the view verifies.
			if stdout, stderr, code := runTfmirror(t, f.work, f.env, "verify", filepath.Join(kind, ".tfmirror", "store")); code != 0 {
				t.Errorf("verify the store: exit %d\n%s%s", code, stdout, stderr)
			}
			if kind == "packed" {
				checkTreeModes(t, filepath.Join(out, "registry.opentofu.org"))
			} else {
				checkReadable(t, filepath.Join(out, "registry.opentofu.org"))
			}

			wd := t.TempDir()
			writeFile(t, filepath.Join(wd, "main.tf"), config)
			cli := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", out)
			initThroughMirror(t, f, tofuBin(t), wd, cli, plat, map[string]pkgVersion{
				"registry.opentofu.org/hashicorp/foo": pkgs[0],
				"registry.opentofu.org/hashicorp/bar": pkgs[1],
				"bücher.example/acme/idn":             pkgs[2],
			})

			// A rebuild changes nothing and keeps the view.
			if stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", "mirror.hcl", "--out", kind, "--layout", kind); code != 0 {
				t.Fatalf("rebuild: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}

// checkReadable checks that everything under dir is world-readable (and
// directories traversable), as a web server or another user needs.
func checkReadable(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o444)
		if d.IsDir() {
			want = 0o555
		}
		if info.Mode().Perm()&want != want {
			t.Errorf("%s has mode %04o, not readable by everyone", p, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

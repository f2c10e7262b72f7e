package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTestFileProvidersMatchTofuInit: "tofu init" (1.12) installs the
// providers a configuration's test files need (a provider block in
// tests/, the module a run block tests; not a mock_provider), and so
// does the mirror tfmirror builds: tofu, installing only from it, locks
// exactly what it holds, and the build names the providers only tests
// need; tfmirror lock writes them, and tofu init takes that lock file
// read-only. With --no-tests they are left out.
func TestTestFileProvidersMatchTofuInit(t *testing.T) {
	fx := newMonorepoFixture(t)
	config := filepath.Join(fx.work, "cfg")
	writeFile(t, filepath.Join(config, "main.tf"), "terraform {\n  required_providers {\n    foo = {\n      source  = \"hashicorp/foo\"\n      version = \"~> 1.0\"\n    }\n  }\n}\n")
	writeFile(t, filepath.Join(config, "tests", "main.tftest.hcl"), "provider \"baz\" {}\n\nmock_provider \"mocky\" {}\n\nrun \"unit\" {\n  module {\n    source = \"./setup\"\n  }\n}\n")
	writeFile(t, filepath.Join(config, "setup", "main.tf"), "terraform {\n  required_providers {\n    bar = {\n      source  = \"hashicorp/bar\"\n      version = \"< 0.2.0\"\n    }\n  }\n}\n")
	plat := []string{"--platform", hostPlatform()}

	stdout, stderr, code := runTfmirror(t, fx.work, fx.env, append([]string{"build", "cfg", "--config", "mirror.hcl", "--out", "site"}, plat...)...)
	if code != 0 {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, p := range []string{"hashicorp/bar", "hashicorp/baz"} {
		if want := "registry.opentofu.org/" + p + " is needed only by test files (cfg/tests/main.tftest.hcl)"; !strings.Contains(stdout+stderr, want) {
			t.Errorf("the build does not say %q", want)
		}
	}

	site := filepath.Join(fx.work, "site")
	base := startNginx(t, site, fx.ca)
	wd := filepath.Join(t.TempDir(), "cfg")
	copyTree(t, config, wd)
	fx.tofuInit(t, tofuBin(t), wd, mirrorOnlyCLI(base))
	mirrored := map[string]string{}
	for p, versions := range siteProviders(t, site) {
		mirrored[p] = strings.Join(versions, ",")
	}
	want := map[string]string{
		"registry.opentofu.org/hashicorp/foo": "1.2.0",
		"registry.opentofu.org/hashicorp/bar": "0.1.0",
		"registry.opentofu.org/hashicorp/baz": "3.1.0",
	}
	if diff := cmp.Diff(want, mirrored); diff != "" {
		t.Errorf("mirrored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(mirrored, lockVersions(t, filepath.Join(wd, ".terraform.lock.hcl"))); diff != "" {
		t.Errorf("tofu init from the mirror locked (+) other than what it holds (-):\n%s", diff)
	}

	// tfmirror lock writes the test files' providers too: tofu init
	// takes its lock file read-only.
	locked := filepath.Join(t.TempDir(), "cfg")
	copyTree(t, config, locked)
	stdout, stderr, code = runTfmirror(t, fx.work, fx.env, append([]string{"lock", locked, "--mirror", "site"}, plat...)...)
	if code != 0 {
		t.Fatalf("lock: exit %d\n%s%s", code, stdout, stderr)
	}
	fx.tofuInit(t, tofuBin(t), locked, mirrorOnlyCLI(base), "-lockfile=readonly")
	if diff := cmp.Diff(mirrored, lockVersions(t, filepath.Join(locked, ".terraform.lock.hcl"))); diff != "" {
		t.Errorf("tfmirror lock wrote (+) other than what the mirror holds (-):\n%s", diff)
	}

	stdout, stderr, code = runTfmirror(t, fx.work, fx.env, append([]string{"build", "cfg", "--config", "mirror.hcl", "--out", "site2", "--no-tests"}, plat...)...)
	if code != 0 || strings.Contains(stdout+stderr, "test files") {
		t.Fatalf("build --no-tests: exit %d, want 0 and no word of test files\n%s%s", code, stdout, stderr)
	}
	if got := siteProviders(t, filepath.Join(fx.work, "site2")); len(got) != 1 || got["registry.opentofu.org/hashicorp/foo"] == nil {
		t.Errorf("build --no-tests mirrored %v, want only hashicorp/foo", got)
	}
}

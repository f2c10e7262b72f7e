package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lockedModule is fooRootModule with the lock file lock writes from site
// for both of its platforms.
func lockedModule(t *testing.T, o origin, site string) (string, []byte) {
	t.Helper()
	module := fooRootModule(t)
	if code, stdout, stderr := o.run(t, module, "lock", "--mirror", site); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s%s", code, stdout, stderr)
	}
	return module, readLock(t, module)
}

// requireFoo makes the module require hashicorp/foo with constraint.
func requireFoo(t *testing.T, module, constraint string) {
	t.Helper()
	// The host written out: Terraform reads "hashicorp/foo" on
	// registry.terraform.io (TestLockCheckSourceWithoutAHost).
	text := "terraform {\n  required_providers {\n    foo = { source = \"registry.opentofu.org/hashicorp/foo\", version = \"" + constraint + "\" }\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLock(t *testing.T, module string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(module, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeLock(t *testing.T, module, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(module, ".terraform.lock.hcl"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// findings are the lock_finding events of a --json run.
func findings(t *testing.T, stdout string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if ev["event"] != "lock_finding" {
			continue
		}
		f := map[string]string{}
		for k, v := range ev {
			if s, ok := v.(string); ok {
				f[k] = s
			}
		}
		out = append(out, f)
	}
	return out
}

func TestLockCheckCompleteFilePasses(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, before := lockedModule(t, o, site)
	code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site)
	if code != ExitOK || !strings.Contains(stdout, "ok        .terraform.lock.hcl") {
		t.Errorf("exit %d, want 0 and the file ok\n%s%s", code, stdout, stderr)
	}
	if string(readLock(t, module)) != string(before) {
		t.Error("--check changed the lock file")
	}
}

func TestLockCheckAndFixMissingPlatform(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, complete := lockedModule(t, o, site)
	h1 := regexp.MustCompile(` *"h1:[^"]+",\n`).FindAllString(string(complete), -1)
	if len(h1) != 2 {
		t.Fatalf("%d h1: lines, want 2:\n%s", len(h1), complete)
	}
	// Which h1: belongs to darwin_arm64: the one lock writes for it alone.
	other := fooRootModule(t)
	if code, _, stderr := o.run(t, other, "lock", "--mirror", site, "--platform", "linux_amd64"); code != ExitOK {
		t.Fatal(stderr)
	}
	darwin := h1[0]
	if strings.Contains(string(readLock(t, other)), darwin) {
		darwin = h1[1]
	}
	damaged := strings.Replace(string(complete), darwin, "", 1)
	writeLock(t, module, damaged)

	code, stdout, _ := o.run(t, module, "lock", "--check", "--mirror", site, "--json")
	got := findings(t, stdout)
	if code != ExitFailure || len(got) != 1 {
		t.Fatalf("exit %d with %d findings, want 1 and one finding\n%s", code, len(got), stdout)
	}
	want := map[string]string{"reason": "missing-h1", "effect": "rewrite", "platform": "darwin_arm64",
		"provider": "registry.opentofu.org/hashicorp/foo", "version": "1.0.0", "path": ".terraform.lock.hcl"}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %q, want %q", k, got[0][k], v)
		}
	}
	if string(readLock(t, module)) != damaged {
		t.Error("--check wrote the lock file")
	}
	if code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site, "--platform", "linux_amd64"); code != ExitOK {
		t.Errorf("checked on linux_amd64 only: exit %d, want 0\n%s%s", code, stdout, stderr)
	}

	code, stdout, stderr := o.run(t, module, "lock", "--fix", "--mirror", site)
	if code != ExitOK || !strings.Contains(stdout, "wrote") {
		t.Errorf("--fix: exit %d, want 0 and the file written\n%s%s", code, stdout, stderr)
	}
	if string(readLock(t, module)) != string(complete) {
		t.Errorf("--fix wrote\n%s\nwant what lock writes\n%s", readLock(t, module), complete)
	}
}

// Init leaves a file alone when only the constraints changed: a note,
// exit 0, and --fix writes nothing.
func TestLockCheckConstraintsAloneAreANote(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, before := lockedModule(t, o, site)
	requireFoo(t, module, ">= 1.0")
	code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site)
	if code != ExitOK || !strings.Contains(stdout, "note ") || !strings.Contains(stdout, `">= 1.0.0"`) {
		t.Errorf("exit %d, want 0 and a note naming the new constraints\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := o.run(t, module, "lock", "--fix", "--mirror", site); code != ExitOK || string(readLock(t, module)) != string(before) {
		t.Errorf("--fix: exit %d, or it rewrote a file init keeps\n%s", code, stderr)
	}
}

// A locked version the constraints exclude makes init fail; --fix cannot
// write that file (lock refuses it too) and says so.
func TestLockCheckVersionNoLongerAllowed(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, before := lockedModule(t, o, site)
	requireFoo(t, module, ">= 2.0")
	code, stdout, _ := o.run(t, module, "lock", "--check", "--mirror", site, "--json")
	got := findings(t, stdout)
	if code != ExitFailure || len(got) != 1 || got[0]["reason"] != "version-not-allowed" || got[0]["effect"] != "fail" {
		t.Errorf("exit %d, want 1 with one version-not-allowed finding\n%s", code, stdout)
	}
	code, stdout, stderr := o.run(t, module, "lock", "--fix", "--mirror", site)
	if code != ExitFailure || !strings.Contains(stderr, "1 lock file would not survive init; 1 pins a version") || !strings.Contains(stderr, "init -upgrade") || string(readLock(t, module)) != string(before) {
		t.Errorf("--fix: exit %d, want 1 naming init -upgrade, the file left\n%s%s", code, stdout, stderr)
	}
}

// A locked version with build metadata is another version to init: the
// mirror holds 1.0.0, not 1.0.0+meta ("the previously-selected version
// is no longer available"). check says so, and lock and --fix write no
// file of it (they wrote one without hashes, exit 0).
func TestLockedVersionWithMetadataIsNotHeld(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, complete := lockedModule(t, o, site)
	requireFoo(t, module, "< 2.0")
	m := regexp.MustCompile(`version += "([0-9.]+)"`).FindStringSubmatch(string(complete))
	if m == nil {
		t.Fatalf("no version in\n%s", complete)
	}
	meta := strings.Replace(string(complete), m[0], `version     = "`+m[1]+`+meta"`, 1)
	writeLock(t, module, meta)
	code, stdout, _ := o.run(t, module, "lock", "--check", "--mirror", site, "--json")
	got := findings(t, stdout)
	if code != ExitFailure || len(got) != 1 || got[0]["reason"] != "version-not-held" || got[0]["effect"] != "fail" {
		t.Errorf("--check: exit %d, want 1 with one version-not-held finding\n%s", code, stdout)
	}
	for _, args := range [][]string{{"lock", "--fix", "--mirror", site}, {"lock", "--mirror", site}} {
		code, stdout, stderr := o.run(t, module, args...)
		if code == ExitOK || string(readLock(t, module)) != meta {
			t.Errorf("%v: exit %d, want a failure and the file left as it was\n%s%s", args, code, stdout, stderr)
		}
	}
}

func TestLockCheckStaleAndMissingProviders(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, complete := lockedModule(t, o, site)
	stale := string(complete) + `
provider "registry.opentofu.org/hashicorp/gone" {
  version = "1.0.0"
  hashes = [
    "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
  ]
}
`
	writeLock(t, module, stale)
	code, stdout, _ := o.run(t, module, "lock", "--check", "--mirror", site, "--json")
	got := findings(t, stdout)
	if code != ExitFailure || len(got) != 1 || got[0]["reason"] != "stale-provider" || got[0]["provider"] != "registry.opentofu.org/hashicorp/gone" {
		t.Errorf("exit %d, want 1 with one stale-provider finding for hashicorp/gone\n%s", code, stdout)
	}
	writeLock(t, module, "# This file is maintained automatically by \"tofu init\".\n# Manual edits may be lost in future updates.\n")
	code, stdout, _ = o.run(t, module, "lock", "--check", "--mirror", site, "--json")
	got = findings(t, stdout)
	if code != ExitFailure || len(got) != 1 || got[0]["reason"] != "missing-provider" {
		t.Errorf("exit %d, want 1 with one missing-provider finding\n%s", code, stdout)
	}
}

// Without --platform, lock and lock --check take the manifest's
// platforms, then every platform the mirror holds.
func TestLockTakesTheManifestsPlatforms(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module := fooRootModule(t)
	writeManifest(t, module, `platforms = ["linux_amd64"]`+"\n")
	if code, stdout, stderr := o.run(t, module, "lock", "--mirror", site); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := strings.Count(string(readLock(t, module)), `"h1:`); n != 1 {
		t.Errorf("%d h1: hashes, want the manifest's one platform's\n%s", n, readLock(t, module))
	}
	if code, stdout, stderr := o.run(t, module, "lock", "--check", "--mirror", site); code != ExitOK {
		t.Errorf("--check on the manifest's platforms: exit %d, want 0\n%s%s", code, stdout, stderr)
	}
	if err := os.Remove(filepath.Join(module, "mirror.hcl")); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := o.run(t, module, "lock", "--check", "--mirror", site); code != ExitFailure || !strings.Contains(stdout, "darwin_arm64") {
		t.Errorf("--check on every platform the mirror holds: exit %d, want 1 naming darwin_arm64\n%s", code, stdout)
	}
}

// A source without a registry host is another provider to Terraform
// (registry.terraform.io/hashicorp/foo) than the file locks: checked for
// Terraform by name, the file fails (terraform init -lockfile=readonly
// does); for OpenTofu, and by default, it is fine.
func TestLockCheckSourceWithoutAHost(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, _ := lockedModule(t, o, site)
	main := filepath.Join(module, "main.tf")
	writeFile(t, main, bytes.Replace(readFile(t, main), []byte(`"registry.opentofu.org/hashicorp/foo"`), []byte(`"hashicorp/foo"`), 1))
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, ExitOK},
		{[]string{"--client", "tofu"}, ExitOK},
		{[]string{"--client", "terraform"}, ExitFailure},
	} {
		args := append([]string{"lock", "--check", "--mirror", site}, tc.args...)
		code, stdout, stderr := o.run(t, module, args...)
		if code != tc.want || tc.want == ExitFailure && !strings.Contains(stdout, "registry.terraform.io/hashicorp/foo") {
			t.Errorf("%v: exit %d, want %d (naming registry.terraform.io/hashicorp/foo when it fails)\n%s%s", tc.args, code, tc.want, stdout, stderr)
		}
	}
}

// A file without the mirror's zh: survives terraform init, and tofu init
// through a filesystem mirror; only tofu init through a network mirror
// adds it. --client and --via narrow the check to what the team runs;
// --check with --fix, which contradict each other, is refused.
func TestLockCheckClientAndMethod(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	module, complete := lockedModule(t, o, site)
	noZH := regexp.MustCompile(` *"zh:[^"]+",\n`).ReplaceAllString(string(complete), "")
	writeLock(t, module, noZH)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, ExitFailure},
		{[]string{"--client", "tofu"}, ExitFailure},
		{[]string{"--client", "terraform"}, ExitOK},
		{[]string{"--via", "filesystem_mirror"}, ExitOK},
		{[]string{"--via", "oci_mirror", "--client", "tofu"}, ExitFailure},
		{[]string{"--client", "opentofu"}, ExitUsage},
		{[]string{"--via", "registry"}, ExitUsage},
	} {
		args := append([]string{"lock", "--check", "--mirror", site}, tc.args...)
		if code, stdout, stderr := o.run(t, module, args...); code != tc.want {
			t.Errorf("%v: exit %d, want %d\n%s%s", tc.args, code, tc.want, stdout, stderr)
		}
	}
	if code, _, stderr := o.run(t, module, "lock", "--via", "network_mirror", "--mirror", site); code != ExitUsage || !strings.Contains(stderr, "--check") {
		t.Errorf("--via without --check: exit %d, want %d naming --check\n%s", code, ExitUsage, stderr)
	}
	if code, _, stderr := o.run(t, module, "lock", "--check", "--fix", "--mirror", site); code != ExitUsage || !strings.Contains(stderr, "--check writes nothing") {
		t.Errorf("--check --fix: exit %d, want %d, refused before anything is written\n%s", code, ExitUsage, stderr)
	}
	if got := string(readLock(t, module)); got != noZH {
		t.Error("a check or a refused run changed the lock file")
	}
}

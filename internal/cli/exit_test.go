package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManifestErrorsExitTwo(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"syntax-error.hcl", "syntax-error.hcl:3:26"},
		{"bad-constraint.hcl", "bad-constraint.hcl:4:14"},
		{"bad-platform.hcl", "bad-platform.hcl:1:14"},
		{"port-in-host.hcl", "port-in-host.hcl:3:10"},
	}
	o := newOrigin(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			src, err := filepath.Abs(filepath.Join("..", "..", "testdata", "manifests", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			code, _, stderr := o.run(t, dir, "build", "--config", src)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr does not point at %s:\n%s", tt.want, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
				t.Errorf("a bad manifest created the output directory")
			}
		})
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	o := newOrigin(t)
	for _, args := range [][]string{
		{"build", "--no-such-flag"},
		{"build", "extra-argument"},
		{"no-such-command"},
		{"build", "--parallel", "0"},
		{"build"}, // no mirror.hcl in the directory
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := o.run(t, t.TempDir(), args...)
			if code != ExitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, ExitUsage, stderr)
			}
		})
	}
}

func TestVerificationFailureExitsThree(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.BadSignature("hashicorp", "foo", "1.0.0")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr := o.run(t, dir, "build")
	if code != ExitVerification {
		t.Fatalf("exit code %d, want %d\n%s%s", code, ExitVerification, stdout, stderr)
	}
	for _, want := range []string{"registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64", "signature"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestFailuresExitOne(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64", "freebsd_arm") // freebsd_arm is published, but not by 1.0.0
	tests := []struct {
		name     string
		manifest string
		args     []string
		want     string
	}{
		{"missing platform with --strict", "provider \"hashicorp/foo\" {\n  versions = \">= 1.0.0\"\n  platforms = [\"freebsd_arm\"]\n}", []string{"--strict"}, "1.0.0 freebsd_arm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifest(t, dir, "platforms = [\"linux_amd64\"]\n"+tt.manifest+"\n"+o.hostBlock("registry.opentofu.org"))
			code, stdout, stderr := o.run(t, dir, append([]string{"build"}, tt.args...)...)
			if code != ExitFailure {
				t.Fatalf("exit code %d, want %d\n%s%s", code, ExitFailure, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
		})
	}
}

func TestJSONOutputIsOneObjectPerLine(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "bar", "1.0.0", "darwin_arm64") // darwin_arm64 is published, but not by foo
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "hashicorp/bar" {
  versions  = "1.0.0"
  platforms = ["darwin_arm64"]
}
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, _ := o.run(t, dir, "build", "--json")
	if code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{`"event":"summary"`, `"mirrored":2`, `"skipped":1`, `"exit_code":0`,
		`"status":"mirrored","key_id":"` + o.reg.KeyID + `"},{"provider":"registry.opentofu.org/hashicorp/foo","version":"1.0.0","platform":"darwin_arm64","status":"skipped"},` +
			`{"provider":"registry.opentofu.org/hashicorp/foo","version":"1.0.0","platform":"linux_amd64","status":"mirrored","key_id":"` + o.reg.KeyID + `"}]`} {
		if !strings.Contains(last, want) {
			t.Errorf("summary line lacks %s: %s", want, last)
		}
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") || !strings.HasSuffix(l, "}") {
			t.Errorf("not a JSON object line: %q", l)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	o := newOrigin(t)
	code, stdout, _ := o.run(t, t.TempDir(), "version")
	if code != ExitOK || !strings.HasPrefix(stdout, "tfmirror ") {
		t.Errorf("exit %d, output %q", code, stdout)
	}
}

func TestUnsatisfiableRequirementsExitTwoAndWriteNothing(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	o.reg.Add("hashicorp", "bar", "1.0.0", "linux_amd64")
	tests := []struct {
		name     string
		manifest string
		want     string
	}{
		{"unknown provider", `provider "hashicorp/nope" { versions = "1.0.0" }`, "does not know provider registry.opentofu.org/hashicorp/nope (check its namespace and type for a typo"},
		{"nothing matches", `provider "hashicorp/foo" { versions = ">= 2.0.0" }`, "newest available: 1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifest(t, dir, "platforms = [\"linux_amd64\"]\n"+tt.manifest+"\n"+
				`provider "hashicorp/bar" { versions = "1.0.0" }`+"\n"+o.hostBlock("registry.opentofu.org"))
			code, stdout, stderr := o.run(t, dir, "build")
			if code != ExitUsage {
				t.Fatalf("exit code %d, want %d\n%s%s", code, ExitUsage, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "nothing was written") {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr)
			}
			if strings.Contains(stderr, "the registry does not know this provider") {
				t.Errorf("the error says twice that the registry does not know the provider:\n%s", stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
				t.Errorf("the output directory was created: %v", err)
			}
		})
	}
}

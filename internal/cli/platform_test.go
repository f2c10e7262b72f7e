package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A platform typo in the manifest or on the command line is refused
// before any request, naming the platform meant; so is a platform listed
// twice, most often another one mistyped.
func TestPlatformTypoIsRefusedBeforeAnyRequest(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	for name, c := range map[string]struct {
		manifest string
		args     []string
		want     string
	}{
		"manifest":            {`platforms = ["linux_amd64", "linux_amd46"]`, nil, "mirror.hcl:1:29: Invalid platform: platform linux_amd46: unknown architecture \"amd46\"; did you mean linux_amd64?"},
		"command line":        {`platforms = ["linux_amd64"]`, []string{"--platform", "lnux_amd64"}, "--platform: platform lnux_amd64: unknown operating system \"lnux\"; did you mean linux_amd64?"},
		"manifest, twice":     {`platforms = ["linux_amd64", "darwin_arm64", "linux_amd64"]`, nil, "mirror.hcl:1:45: Invalid platform: platform linux_amd64 is listed twice (items 1 and 3); was another one meant?"},
		"command line, twice": {`platforms = ["linux_amd64"]`, []string{"--platform", "linux_amd64", "--platform", "linux_amd64"}, "--platform: platform linux_amd64 is listed twice (items 1 and 2)"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifest(t, dir, c.manifest+"\nprovider \"hashicorp/foo\" { versions = \"1.0.0\" }\n"+o.hostBlock("registry.opentofu.org"))
			before := len(o.reg.Requests())
			code, stdout, stderr := o.run(t, dir, append([]string{"build"}, c.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitUsage, c.want, stdout, stderr)
			}
			if n := len(o.reg.Requests()) - before; n != 0 {
				t.Errorf("%d requests were made", n)
			}
			if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
				t.Errorf("the output directory was created")
			}
		})
	}
}

// --platform replaces the platforms of the manifest's provider blocks
// too, as tofu providers mirror -platform does.
func TestPlatformFlagReplacesTheManifests(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" {
  versions  = "1.0.0"
  platforms = ["linux_amd64"]
}
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr := o.run(t, dir, "build", "--platform", "windows_amd64")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "mirrored  registry.opentofu.org/hashicorp/foo 1.0.0 windows_amd64") || strings.Contains(stdout, "linux_amd64") || strings.Contains(stdout, "darwin_arm64") {
		t.Errorf("want windows_amd64 only:\n%s", stdout)
	}
}

// A platform that no selected release of any provider publishes, as the
// registries' version lists say, is refused (exit 2) before any download
// document is read: a nightly job must not stay green mirroring nothing
// for it. One that only some releases lack is skipped with a warning, or
// refused with --strict (TestFaultMatrix).
func TestUnpublishedPlatformIsRefusedBeforeAnyDownload(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64")
	o.reg.Add("hashicorp", "bar", "2.0.0", "linux_amd64", "windows_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "freebsd_arm", "windows_arm64"]
provider "hashicorp/foo" { versions = ">= 1.0.0" }
provider "hashicorp/bar" { versions = "2.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr := o.run(t, dir, "build")
	want := "platform freebsd_arm: no selected release publishes it, as the registries' version lists say (registry.opentofu.org/hashicorp/bar 2.0.0, registry.opentofu.org/hashicorp/foo 1.0.0, registry.opentofu.org/hashicorp/foo 1.1.0; they publish darwin_arm64, linux_amd64, windows_arm64)"
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d and\n%s\n%s%s", code, ExitUsage, want, stdout, stderr)
	}
	if strings.Contains(stderr, "windows_arm64:") || strings.Contains(stderr, "linux_amd64:") {
		t.Errorf("a platform some release publishes was refused:\n%s", stderr)
	}
	for _, r := range o.reg.Requests() {
		if strings.Contains(r, "/download/") || strings.HasSuffix(r, ".zip") {
			t.Errorf("requested %s before refusing the platform", r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
		t.Errorf("the output directory was created")
	}

	writeManifest(t, dir, `platforms = ["linux_amd64", "windows_arm64"]
provider "hashicorp/foo" { versions = ">= 1.0.0" }
provider "hashicorp/bar" { versions = "2.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr = o.run(t, dir, "build")
	if code != ExitOK || !strings.Contains(stdout, "registry.opentofu.org/hashicorp/foo 1.1.0 is not published for windows_arm64: skipped") {
		t.Errorf("exit %d, want 0 with a warning for the releases that lack windows_arm64\n%s%s", code, stdout, stderr)
	}
}

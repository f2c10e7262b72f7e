package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A platform typo in the manifest or on the command line is refused
// before any request, naming the platform meant.
func TestPlatformTypoIsRefusedBeforeAnyRequest(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	for name, c := range map[string]struct {
		manifest string
		args     []string
		want     string
	}{
		"manifest":     {`platforms = ["linux_amd64", "linux_amd46"]`, nil, "mirror.hcl:1:29: Invalid platform: platform linux_amd46: unknown architecture \"amd46\"; did you mean linux_amd64?"},
		"command line": {`platforms = ["linux_amd64"]`, []string{"--platform", "lnux_amd64"}, "--platform: platform lnux_amd64: unknown operating system \"lnux\"; did you mean linux_amd64?"},
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

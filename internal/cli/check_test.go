package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check validates a manifest and what it names on the local disk without
// any request: problems exit 2 with their position, a good manifest says
// what it asks for.
func TestCheckWithoutNetwork(t *testing.T) {
	o := newOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
out = ["site", "s3://bucket/mirror/"]
provider "hashicorp/foo" { versions = ">= 1.0" }
provider "hashicorp/bar" { newest = 2 }
`+o.hostBlock("registry.opentofu.org"))
	before := len(o.reg.Requests())
	code, stdout, stderr := o.run(t, dir, "check")
	if code != ExitOK || !strings.Contains(stdout, "mirror.hcl: 2 providers, 0 modules, 0 configurations; platforms linux_amd64, darwin_arm64; destinations") ||
		!strings.Contains(stdout, "s3://bucket/mirror/") {
		t.Errorf("a good manifest: exit %d\n%s%s", code, stdout, stderr)
	}

	for name, c := range map[string]struct{ manifest, want string }{
		"platform typo":       {`platforms = ["linux_amd46"]`, "did you mean linux_amd64?"},
		"near-miss out":       {`platforms = ["linux_amd64"]` + "\nout = [\"s3:/bucket/mirror\"]", "did you mean s3://bucket/mirror?"},
		"bad constraint":      {`platforms = ["linux_amd64"]` + "\nprovider \"hashicorp/baz\" { versions = \"v1.0\" }", "Invalid version constraint"},
		"client cert missing": {`platforms = ["linux_amd64"]` + "\nclient_certificate \"mirror.example.com\" {\n  cert_file = \"nope.pem\"\n  key_file = \"nope-key.pem\"\n}", "client_certificate \"mirror.example.com\""},
		"configuration":       {`platforms = ["linux_amd64"]` + "\nconfiguration \"live\" {}", "live"},
		"no version allowed":  {`platforms = ["linux_amd64"]` + "\nprovider \"hashicorp/baz\" { versions = \">= 3.0, < 2.0\" }", "Version constraint allows no version"},
		"no version together": {`platforms = ["linux_amd64"]` + "\nconfiguration \"live\" {}", `its version constraints ">= 2.0" (live/main.tf:3), "< 2.0" (live/main.tf:7) together allow no version`},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeManifest(t, dir, c.manifest+"\nprovider \"hashicorp/foo\" { versions = \"1.0.0\" }\n")
			if name == "no version together" {
				if err := os.MkdirAll(filepath.Join(dir, "live"), 0o755); err != nil {
					t.Fatal(err)
				}
				tf := "terraform {\n  required_providers {\n    x = { source = \"hashicorp/x\", version = \">= 2.0\" }\n  }\n}\n" +
					"provider \"x\" {\n  version = \"< 2.0\"\n}\n"
				if err := os.WriteFile(filepath.Join(dir, "live", "main.tf"), []byte(tf), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if name == "configuration" {
				if err := os.MkdirAll(filepath.Join(dir, "live"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "live", "main.tf"), []byte("terraform {\n  required_providers {\n    x = { source = \"hashicorp/x\"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, stdout, stderr := o.run(t, dir, "check")
			if code != ExitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, want %d saying %q\n%s%s", code, ExitUsage, c.want, stdout, stderr)
			}
		})
	}
	if n := len(o.reg.Requests()) - before; n != 0 {
		t.Errorf("check made %d requests", n)
	}
}

// What is wrong in a configuration is said even when the platforms are
// missing too: the configuration is read first.
func TestCheckReadsTheConfigurationFirst(t *testing.T) {
	o := newOrigin(t)
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	if err := os.MkdirAll(live, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, "main.tf"), []byte("terraform {\n  required_providers {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, dir, "check", "live")
	if code != ExitUsage || !strings.Contains(stderr, "live/main.tf:2:22: Unclosed configuration block") {
		t.Errorf("check of a broken configuration without platforms: exit %d, want %d naming the file and line\n%s%s", code, ExitUsage, stdout, stderr)
	}
}

package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/jsonstream"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// origin is a fake registry plus the environment tfmirror needs to trust it.
type origin struct {
	reg     *fakeregistry.Registry
	environ []string
	// locationHosts are the hosts besides the registry's own on which
	// its download answers may name locations (allowed_location_hosts):
	// every test server runs on 127.0.0.1, a loopback address.
	locationHosts []string
}

func newOrigin(t *testing.T) origin {
	t.Helper()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	return origin{reg: reg, environ: []string{"SSL_CERT_FILE=" + caFile}}
}

// fooOrigin is an origin with hashicorp/foo 1.0.0 for linux_amd64, and a
// directory with a manifest that mirrors just that.
func fooOrigin(t *testing.T) (origin, string) {
	t.Helper()
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	return o, dir
}

// hostBlock points registry.opentofu.org at the fake registry.
func (o origin) hostBlock(host string) string {
	return `host "` + host + `" {
  services = { "providers.v1" = "` + o.reg.ServicesURL + `" }
}
`
}

// run runs tfmirror in-process in dir and returns its exit code and output.
func (o origin) run(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	defer t.Chdir(wd)
	code := Main(context.Background(), Env{Args: args, Stdout: &stdout, Stderr: &stderr, Environ: o.environ})
	if slices.Contains(args, "--json") {
		jsonstream.Check(t, stdout.String(), code)
	}
	return code, stdout.String(), stderr.String()
}

func writeManifest(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "mirror.hcl"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func zh(b []byte) string {
	s := sha256.Sum256(b)
	return "zh:" + hex.EncodeToString(s[:])
}

func TestBuildWritesNetworkMirror(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64")
	o.reg.Add("hashicorp", "foo", "2.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "~> 1.0" }
`+o.hostBlock("registry.opentofu.org"))

	code, stdout, stderr := o.run(t, dir, "build")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	base := filepath.Join(dir, "site", "registry.opentofu.org", "hashicorp", "foo")
	index, err := os.ReadFile(filepath.Join(base, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"versions\": {\n    \"1.0.0\": {},\n    \"1.1.0\": {}\n  }\n}"
	if string(index) != want {
		t.Errorf("index.json =\n%s\nwant\n%s", index, want)
	}
	v, err := os.ReadFile(filepath.Join(base, "1.0.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, plat := range []string{"linux_amd64", "darwin_arm64"} {
		name := "terraform-provider-foo_1.0.0_" + plat + ".zip"
		got, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		archive := o.reg.Archive("hashicorp", "foo", "1.0.0", plat)
		if !bytes.Equal(got, archive) {
			t.Errorf("%s differs from upstream", name)
		}
		if !strings.Contains(string(v), zh(archive)) || !strings.Contains(string(v), `"url": "`+name+`"`) {
			t.Errorf("1.0.0.json lacks %s entry:\n%s", plat, v)
		}
	}
	if !strings.Contains(stdout, "skipped") || !strings.Contains(stdout, "1.1.0 darwin_arm64") {
		t.Errorf("missing platform not reported as skipped:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "site", ".tfmirror-staging")); !os.IsNotExist(err) {
		t.Errorf("staging directory left behind: %v", err)
	}
}

// summaryLine is the last line of a --json run, which must be its
// summary.
func summaryLine(t *testing.T, stdout string) []byte {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	last := []byte(lines[len(lines)-1])
	var ev struct{ Event string }
	if err := json.Unmarshal(last, &ev); err != nil || ev.Event != "summary" {
		t.Fatalf("the last line is not a summary (%v):\n%s", err, stdout)
	}
	return last
}

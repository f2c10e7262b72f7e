package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// builtSite builds foo 1.0.0 for two platforms and returns the site dir.
func builtSite(t *testing.T, o origin) string {
	t.Helper()
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	return siteOf(t, o, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
}

// siteOf builds manifest in a new directory and returns its site.
func siteOf(t *testing.T, o origin, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	writeManifest(t, dir, manifest)
	mustRun(t, o, dir, "build")
	return filepath.Join(dir, "site")
}

// serveSite serves a directory over TLS with the given content type for
// JSON files, trusted through the origin's environment.
func serveSite(t *testing.T, o *origin, site, jsonType string) string {
	t.Helper()
	return serveSiteSeeing(t, o, site, jsonType, nil)
}

// serveSiteSeeing is serveSite that also shows seen every request.
func serveSiteSeeing(t *testing.T, o *origin, site, jsonType string, seen func(*http.Request)) string {
	t.Helper()
	ca := testca.New(t)
	files := http.FileServer(http.Dir(site))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen(r)
		}
		if strings.HasSuffix(r.URL.Path, ".json") {
			w.Header().Set("Content-Type", jsonType)
		}
		files.ServeHTTP(w, r)
	}))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	o.environ = []string{"SSL_CERT_FILE=" + caFile}
	return srv.URL + "/"
}

func TestVerifyDirectoryAndURL(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	if code, stdout, stderr := o.run(t, t.TempDir(), "verify", site); code != ExitOK || !strings.Contains(stdout, "1 provider, 1 version, 2 archives checked: 0 problems") {
		t.Fatalf("verify %s: exit %d\n%s%s", site, code, stdout, stderr)
	}
	url := serveSite(t, &o, site, "application/json")
	if code, stdout, stderr := o.run(t, t.TempDir(), "verify", url); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Fatalf("verify %s: exit %d\n%s%s", url, code, stdout, stderr)
	}
}

// A URL where nothing is (a typo), verified from a directory whose
// mirror.hcl names providers, is bad input (exit 2) saying so, not a
// mirror with problems (exit 3).
func TestVerifyWrongURLWithAManifest(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	url := serveSite(t, &o, site, "application/json")
	work := t.TempDir()
	writeManifest(t, work, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`)
	code, stdout, stderr := o.run(t, work, "verify", url+"nothing/")
	if code != ExitUsage || !strings.Contains(stderr, "holds no mirror: no catalog.json, and no index.json of the 1 provider the manifest names") {
		t.Errorf("verify of a URL where nothing is: exit %d, want %d saying it holds no mirror\n%s%s", code, ExitUsage, stdout, stderr)
	}
}

func TestVerifyReportsProblemsWithPaths(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	archive := filepath.Join(site, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_darwin_arm64.zip")
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := o.run(t, t.TempDir(), "verify", site, "--json")
	if code != ExitVerification {
		t.Fatalf("exit %d, want %d\n%s", code, ExitVerification, stdout)
	}
	var out struct {
		Problems []struct{ Path, Message string }
		ExitCode int `json:"exit_code"`
	}
	if err := json.Unmarshal(summaryLine(t, stdout), &out); err != nil {
		t.Fatalf("--json output is not one JSON object: %v\n%s", err, stdout)
	}
	if len(out.Problems) == 0 || out.ExitCode != ExitVerification || !strings.Contains(out.Problems[0].Path, "registry.opentofu.org/hashicorp/foo/") {
		t.Errorf("problems %+v, exit_code %d", out.Problems, out.ExitCode)
	}
}

func TestVerifyRequiresJSONContentTypeOverHTTP(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	url := serveSite(t, &o, site, "text/plain; charset=utf-8")
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", url)
	if code != ExitVerification || !strings.Contains(stdout, "problem  registry.opentofu.org/hashicorp/foo/index.json:") || !strings.Contains(stdout, "application/json") {
		t.Errorf("exit %d, want %d with a problem at index.json naming the content type\n%s%s", code, ExitVerification, stdout, stderr)
	}
}

package cli

import (
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// The location rule through the command line: a registry or an upstream
// mirror chooses URLs for tfmirror to fetch; another host's credentials do
// not go there unless the manifest says so, plain http and loopback
// services are refused unless the manifest allows their host, and a
// network mirror's archives stay on its origin. Every test server runs on
// 127.0.0.1, so every allowance below is explicit.

// recordingHost is an https (or, plain, http) server on 127.0.0.1 that
// records the Authorization header of every request and serves body at
// any path, to requests bearing token only when token is set (a private
// module host answering 401 without it).
type recordingHost struct {
	srv   *httptest.Server
	token string
	body  []byte
	mu    sync.Mutex
	auths []string
}

func startRecordingHost(t *testing.T, ca *testca.CA, plain bool, token string, body []byte) *recordingHost {
	t.Helper()
	h := &recordingHost{token: token, body: body}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.auths = append(h.auths, r.Header.Get("Authorization"))
		h.mu.Unlock()
		if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
			http.Error(w, "private: credentials required", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(h.body)
	}))
	if plain {
		h.srv.Start()
	} else {
		h.srv.TLS = ca.TLSConfig(t)
		h.srv.StartTLS()
	}
	t.Cleanup(h.srv.Close)
	return h
}

// host is the server's "127.0.0.1:PORT".
func (h *recordingHost) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(h.srv.URL, "https://"), "http://")
}

// seen returns the Authorization header of every request so far.
func (h *recordingHost) seen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.auths...)
}

// locationOrigin is a fake module registry and the CA its servers share.
func locationOrigin(t *testing.T) (origin, *testca.CA) {
	t.Helper()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	return origin{reg: reg, environ: []string{"SSL_CERT_FILE=" + caFile}}, ca
}

// TestRegistryLocationGetsNoOtherHostsToken: a module registry answers
// with a download location on a second host for which the manifest holds
// a token (a private module host). The token is not sent there: the host
// answers 401, the build fails saying which credentials it withheld and
// how to send them, and nothing is published. Only with
// for_locations_from naming the registry in that host's credentials
// block does the token go, and the module is mirrored. The token never
// shows in the output.
func TestRegistryLocationGetsNoOtherHostsToken(t *testing.T) {
	const secret = "SECRET-PRIVATE-HOST-TOKEN"
	o, ca := locationOrigin(t)
	private := startRecordingHost(t, ca, false, secret, zipbuild.Bytes(t, zipbuild.File("main.tf", "# private\n")))
	o.reg.AddModule("acme/private/aws", "1.0.0", private.srv.URL+"/private.zip", false)
	manifest := func(credentials string) string {
		return `module "acme/private/aws" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "modules.v1" = "` + o.reg.ModulesURL + `" }
}
settings {
  allowed_location_hosts = ["` + private.host() + `"]
}
credentials "` + private.host() + `" {
  token = "` + secret + `"
` + credentials + `}
`
	}
	published := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "site", "modules", "registry.opentofu.org", "acme", "private", "aws", "1.0.0.zip"))
		return err == nil
	}

	dir := t.TempDir()
	writeManifest(t, dir, manifest(""))
	code, stdout, stderr := o.run(t, dir, "build")
	out := stdout + stderr
	if code != ExitFailure {
		t.Fatalf("build: exit %d, want %d\n%s", code, ExitFailure, out)
	}
	for _, want := range []string{
		"module acme/private/aws 1.0.0", "401",
		"tfmirror did not send its credentials for " + private.host() + ": the location was named by the registry registry.opentofu.org",
		`list the registry in for_locations_from of the manifest's credentials "` + private.host() + `" block`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("the output shows the token:\n%s", out)
	}
	for _, auth := range private.seen() {
		if auth != "" {
			t.Errorf("the private host got Authorization %q from a location another registry named", auth)
		}
	}
	if len(private.seen()) == 0 {
		t.Error("the private host was not asked at all")
	}
	if published(dir) {
		t.Error("the module was published")
	}

	// The manifest lets the registry's locations carry the host's token.
	dir = t.TempDir()
	writeManifest(t, dir, manifest(`  for_locations_from = ["registry.opentofu.org"]
`))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK || !published(dir) {
		t.Fatalf("build with for_locations_from: exit %d (published %v)\n%s%s", code, published(dir), stdout, stderr)
	}
	if seen := private.seen(); seen[len(seen)-1] != "Bearer "+secret {
		t.Errorf("with for_locations_from the private host got Authorization %q", seen[len(seen)-1])
	}
}

// TestRegistryLocationOnLoopbackRefused: a module registry answering with
// a location on a loopback service of another port, over https or plain
// http, is refused before anything is asked of the service, with an error
// naming the module, the location (redacted) and the setting that allows
// it; nothing is published. Allowed by host:port, the same location is
// fetched and published.
func TestRegistryLocationOnLoopbackRefused(t *testing.T) {
	o, ca := locationOrigin(t)
	archive := zipbuild.Bytes(t, zipbuild.File("main.tf", "# inside\n"))
	for _, plain := range []bool{false, true} {
		name := map[bool]string{false: "https", true: "plain http"}[plain]
		t.Run(name, func(t *testing.T) {
			inside := startRecordingHost(t, ca, plain, "", archive)
			module := "acme/inside" + map[bool]string{false: "tls", true: "plain"}[plain] + "/aws"
			o.reg.AddModule(module, "1.0.0", inside.srv.URL+"/m.zip?X-Amz-Signature=SIGSECRET", false)
			blocks := `module "` + module + `" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "modules.v1" = "` + o.reg.ModulesURL + `" }
}
`
			published := func(dir string) bool {
				_, err := os.Stat(filepath.Join(dir, "site", "modules", "registry.opentofu.org", module, "1.0.0.zip"))
				return err == nil
			}
			dir := t.TempDir()
			writeManifest(t, dir, blocks)
			code, stdout, stderr := o.run(t, dir, "build")
			out := stdout + stderr
			if code != ExitFailure {
				t.Fatalf("build: exit %d, want %d\n%s", code, ExitFailure, out)
			}
			for _, want := range []string{
				"module " + strings.TrimPrefix(module, "registry.opentofu.org/") + " 1.0.0",
				"refused " + inside.srv.URL + "/m.zip?X-Amz-Signature=xxxxx", "named by the registry registry.opentofu.org",
				`allowed_location_hosts = ["` + inside.host() + `"]`,
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "SIGSECRET") {
				t.Errorf("the output shows the signature:\n%s", out)
			}
			if n := len(inside.seen()); n != 0 {
				t.Errorf("the loopback service got %d requests", n)
			}
			if published(dir) {
				t.Error("the module was published")
			}

			dir = t.TempDir()
			writeManifest(t, dir, blocks+"settings {\n  allowed_location_hosts = [\""+inside.host()+"\"]\n}\n")
			if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK || !published(dir) {
				t.Errorf("build with the host allowed: exit %d (published %v)\n%s%s", code, published(dir), stdout, stderr)
			}
		})
	}
}

// hostileMirror is an upstream network mirror (https, 127.0.0.1) whose
// <version>.json names, for hashicorp/foo 1.0.0 linux_amd64, the archive
// URL it is given, with the archive's real hash.
func hostileMirror(t *testing.T, ca *testca.CA, archiveURL, hash string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mirror/registry.opentofu.org/hashicorp/foo/index.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"versions":{"1.0.0":{}}}`)
		case "/mirror/registry.opentofu.org/hashicorp/foo/1.0.0.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"archives":{"linux_amd64":{"url":%q,"hashes":[%q]}}}`, archiveURL, hash)
		default:
			http.NotFound(w, r)
		}
	}))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestUpstreamMirrorURLsStayOnItsOrigin: an upstream network mirror whose
// <version>.json names archive URLs on another host (another port of
// 127.0.0.1, over https) or on a plain-http loopback service, with the
// hashes matching, gets them refused: the build fails naming the mirror,
// the provider, version and platform and the URL (redacted), the other
// host is never asked, and nothing is published. With the host allowed,
// the archive is fetched, checked against the hashes and published.
func TestUpstreamMirrorURLsStayOnItsOrigin(t *testing.T) {
	o, ca := locationOrigin(t)
	o.reg.Add(ns, typ, base, "linux_amd64")
	archive := o.reg.Archive(ns, typ, base, "linux_amd64")
	for _, plain := range []bool{false, true} {
		name := map[bool]string{false: "another origin", true: "plain http loopback"}[plain]
		t.Run(name, func(t *testing.T) {
			elsewhere := startRecordingHost(t, ca, plain, "", archive)
			archiveURL := elsewhere.srv.URL + "/a.zip?X-Amz-Signature=SIGSECRET"
			mirror := hostileMirror(t, ca, archiveURL, zh(archive))
			blocks := `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "` + base + `" }
provider_installation {
  network_mirror {
    url = "` + mirror.URL + `/mirror/"
  }
}
`
			published := func(dir string) bool {
				_, err := os.Stat(filepath.Join(dir, "site", "registry.opentofu.org", "hashicorp", "foo", base+".json"))
				return err == nil
			}
			dir := t.TempDir()
			writeManifest(t, dir, blocks)
			code, stdout, stderr := o.run(t, dir, "build")
			out := stdout + stderr
			if code != ExitFailure {
				t.Fatalf("build: exit %d, want %d\n%s", code, ExitFailure, out)
			}
			for _, want := range []string{
				mirror.URL + "/mirror/", "registry.opentofu.org/hashicorp/foo " + base + " linux_amd64",
				"refused " + elsewhere.srv.URL + "/a.zip?X-Amz-Signature=xxxxx", "named by the network mirror",
				"not on the network mirror's own origin", `allowed_location_hosts = ["` + elsewhere.host() + `"]`,
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "SIGSECRET") {
				t.Errorf("the output shows the signature:\n%s", out)
			}
			if n := len(elsewhere.seen()); n != 0 {
				t.Errorf("the host the mirror named got %d requests", n)
			}
			if published(dir) {
				t.Error("the package was published")
			}

			dir = t.TempDir()
			writeManifest(t, dir, blocks+"settings {\n  allowed_location_hosts = [\""+elsewhere.host()+"\"]\n}\n")
			if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK || !published(dir) || len(elsewhere.seen()) == 0 {
				t.Errorf("build with the host allowed: exit %d (published %v, %d requests)\n%s%s", code, published(dir), len(elsewhere.seen()), stdout, stderr)
			}
		})
	}
}

// TestRegistryLocationGetsNoOtherHostsClientCertificate: the same rule
// for client certificates. A module registry names a location on another
// host (another port of 127.0.0.1) that requires a client certificate the
// manifest holds for 127.0.0.1: tfmirror does not present it there, the
// handshake is refused and nothing is published; with for_locations_from
// naming the registry in the client_certificate block it is presented,
// and the module is mirrored.
func TestRegistryLocationGetsNoOtherHostsClientCertificate(t *testing.T) {
	o, ca := locationOrigin(t)
	certFile, keyFile := ca.WriteClientFiles(t, t.TempDir(), "tfmirror")
	var mu sync.Mutex
	var presented []bool
	mtls := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		presented = append(presented, len(r.TLS.PeerCertificates) > 0)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/zip")
		_, _ = w.Write(zipbuild.Bytes(t, zipbuild.File("main.tf", "# mtls\n")))
	}))
	mtls.TLS = ca.TLSConfig(t)
	mtls.TLS.ClientAuth = tls.RequireAndVerifyClientCert
	mtls.TLS.ClientCAs = ca.Pool()
	mtls.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	mtls.StartTLS()
	t.Cleanup(mtls.Close)
	host := strings.TrimPrefix(mtls.URL, "https://")
	o.reg.AddModule("acme/mtls/aws", "1.0.0", mtls.URL+"/m.zip", false)
	manifest := func(extra string) string {
		return `module "acme/mtls/aws" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "modules.v1" = "` + o.reg.ModulesURL + `" }
}
settings {
  allowed_location_hosts = ["` + host + `"]
}
client_certificate "127.0.0.1" {
  cert_file = "` + certFile + `"
  key_file  = "` + keyFile + `"
` + extra + `}
`
	}
	published := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, "site", "modules", "registry.opentofu.org", "acme", "mtls", "aws", "1.0.0.zip"))
		return err == nil
	}

	dir := t.TempDir()
	writeManifest(t, dir, manifest(""))
	hint := `tfmirror did not present its client certificate for 127.0.0.1: the location was named by the registry registry.opentofu.org; to present it, list the registry in for_locations_from of the manifest's client_certificate "127.0.0.1" block`
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitFailure || published(dir) || !strings.Contains(stdout+stderr, "module acme/mtls/aws 1.0.0") || !strings.Contains(stdout+stderr, hint) {
		t.Fatalf("build without for_locations_from: exit %d (published %v), want %d naming the module and saying %q\n%s%s", code, published(dir), ExitFailure, hint, stdout, stderr)
	}
	mu.Lock()
	if len(presented) != 0 {
		t.Errorf("the host got requests %v without a client certificate being presented", presented)
	}
	mu.Unlock()

	dir = t.TempDir()
	writeManifest(t, dir, manifest(`  for_locations_from = ["registry.opentofu.org"]
`))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK || !published(dir) {
		t.Fatalf("build with for_locations_from: exit %d (published %v)\n%s%s", code, published(dir), stdout, stderr)
	}
}

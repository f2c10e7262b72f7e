package cli

import (
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// staticHost serves a site over TLS as a plain static host does with
// nginx's defaults: .json as application/json, .zip as application/zip,
// anything else (the replica's versions and download documents) as
// application/octet-stream. GET /.well-known/terraform.json is answered
// from replica/<requested host>/.well-known/terraform.json, the rule the
// docs/airgap.md gives for serving the replica under the origin's own name.
type staticHost struct {
	url     string   // https://127.0.0.1:PORT/
	addr    string   // 127.0.0.1:PORT
	environ []string // SSL_CERT_FILE trusting its certificate
	mu      sync.Mutex
	paths   []string
}

func serveStatic(t *testing.T, site string) *staticHost {
	t.Helper()
	h := &staticHost{}
	ca := testca.New(t)
	files := http.FileServer(http.Dir(site))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.paths = append(h.paths, r.Host+r.URL.Path)
		h.mu.Unlock()
		if r.URL.Path == "/.well-known/terraform.json" {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			r = r.Clone(r.Context())
			r.URL.Path = "/replica/" + host + "/.well-known/terraform.json"
		}
		switch path.Ext(r.URL.Path) {
		case ".json":
			w.Header().Set("Content-Type", "application/json")
		case ".zip":
			w.Header().Set("Content-Type", "application/zip")
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		files.ServeHTTP(w, r)
	}))
	srv.TLS = ca.TLSConfig(t, "localhost", "127.0.0.1", "registry.opentofu.org")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	h.url = srv.URL + "/"
	h.addr = strings.TrimPrefix(srv.URL, "https://")
	h.environ = []string{"SSL_CERT_FILE=" + caFile}
	return h
}

func (h *staticHost) requested() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.paths)
}

// splitSnapshot separates a site's network mirror files from its replica.
func splitSnapshot(t *testing.T, site string) (mirror, replica map[string]string) {
	t.Helper()
	mirror, replica = map[string]string{}, map[string]string{}
	for rel, sum := range siteSnapshot(t, site) {
		switch {
		case rel == "index.html":
			// The catalog page, which shows the replica's client
			// configuration: in neither.
		case isChangeFile(rel):
			// Each build's own record: its time and command.
		case strings.HasPrefix(rel, "replica/"):
			replica[rel] = sum
		default:
			mirror[rel] = sum
		}
	}
	return mirror, replica
}

const replicaManifest = `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = ">= 1.0.0" }
provider "hashicorp/bar" {
  versions  = "0.1.0"
  platforms = ["linux_amd64"]
}
`

// replicaOrigin publishes signed foo releases and an unsigned bar release
// (registry.opentofu.org accepts those) with a zip holding directory
// entries.
func replicaOrigin(t *testing.T) origin {
	t.Helper()
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64")
	o.reg.AddWithOptions("hashicorp", "bar", "0.1.0", fakeregistry.Options{Unsigned: true, DirEntries: true}, "linux_amd64")
	return o
}

// The replica is a valid origin for tfmirror itself: a build from it,
// through a host block or through service discovery under the origin's
// own name, verifies every signature again and produces a network mirror
// byte for byte identical to the one built from the origin.
func TestReplicaIsAnOriginForTfmirror(t *testing.T) {
	o := replicaOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, replicaManifest+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr := o.run(t, dir, "build", "--registry-replica")
	if code != ExitOK {
		t.Fatalf("build --registry-replica: exit %d\n%s%s", code, stdout, stderr)
	}
	wantOut := []string{
		"registry replica in " + filepath.Join(dir, "site", "replica") + ": 2 providers, 3 versions, 4 packages",
		`host "registry.opentofu.org" {`,
		`services = { "providers.v1" = "https://MIRROR/replica/registry.opentofu.org/v1/providers/" }`,
	}
	for _, s := range wantOut {
		if !strings.Contains(stdout, s) {
			t.Errorf("build output lacks %q:\n%s", s, stdout)
		}
	}
	site := filepath.Join(dir, "site")
	want, _ := splitSnapshot(t, site)
	host := serveStatic(t, site)
	originRequests := len(o.reg.Requests())

	fromReplica := func(t *testing.T, manifest string, extraEnv ...string) {
		t.Helper()
		d := t.TempDir()
		writeManifest(t, d, manifest)
		r := origin{reg: o.reg, environ: append(slices.Clone(host.environ), extraEnv...)}
		code, stdout, stderr := r.run(t, d, "build")
		if code != ExitOK {
			t.Fatalf("build from the replica: exit %d\n%s%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "mirrored  registry.opentofu.org/hashicorp/foo 1.0.0 darwin_arm64") ||
			!strings.Contains(stdout, "signed by "+o.reg.KeyID) {
			t.Errorf("build from the replica does not report foo as mirrored and signed by %s:\n%s", o.reg.KeyID, stdout)
		}
		if !strings.Contains(stdout, "publishes no signing keys") {
			t.Errorf("build from the replica does not warn that bar is unsigned:\n%s", stdout)
		}
		got, replica := splitSnapshot(t, filepath.Join(d, "site"))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("mirror built from the replica differs from the one built from the origin (-origin +replica):\n%s", diff)
		}
		if len(replica) != 0 {
			t.Errorf("a build without --registry-replica wrote %d replica files", len(replica))
		}
		if n := len(o.reg.Requests()); n != originRequests {
			t.Errorf("the origin was contacted: %q", o.reg.Requests()[originRequests:])
		}
	}

	t.Run("host block", func(t *testing.T) {
		fromReplica(t, replicaManifest+`host "registry.opentofu.org" {
  services = { "providers.v1" = "`+host.url+`replica/registry.opentofu.org/v1/providers/" }
}
`)
	})

	t.Run("discovery under the origin's name", func(t *testing.T) {
		// registry.opentofu.org resolves to the static host through a
		// proxy, as an internal DNS override would.
		proxy := &connectProxy{target: host.addr}
		psrv := httptest.NewServer(proxy)
		t.Cleanup(psrv.Close)
		before := len(host.requested())
		fromReplica(t, replicaManifest, "HTTPS_PROXY="+psrv.URL)
		if seen := proxy.seen(); len(seen) == 0 || seen[0] != "registry.opentofu.org:443" {
			t.Errorf("proxy saw CONNECT to %q, want registry.opentofu.org:443", seen)
		}
		if got := host.requested()[before:]; len(got) == 0 || got[0] != "registry.opentofu.org/.well-known/terraform.json" {
			t.Errorf("first request %q, want discovery", got)
		}
	})
}

// "tfmirror replica SITE" writes for an existing tree exactly what
// "build --registry-replica" writes, and refuses to offer a release whose
// kept signature no longer verifies.
func TestReplicaCommand(t *testing.T) {
	o := replicaOrigin(t)
	withFlag, without := t.TempDir(), t.TempDir()
	for _, d := range []string{withFlag, without} {
		writeManifest(t, d, replicaManifest+o.hostBlock("registry.opentofu.org"))
	}
	if code, stdout, stderr := o.run(t, withFlag, "build", "--registry-replica", "--json"); code != ExitOK || !strings.Contains(stdout, `"event":"message","message":"registry replica in`) {
		t.Fatalf("build --registry-replica --json: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := o.run(t, without, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	site := filepath.Join(without, "site")
	if _, replica := splitSnapshot(t, site); len(replica) != 0 {
		t.Fatalf("build without --registry-replica wrote a replica: %v", replica)
	}
	if code, stdout, stderr := o.run(t, t.TempDir(), "replica", site); code != ExitOK {
		t.Fatalf("replica: exit %d\n%s%s", code, stdout, stderr)
	}
	_, want := splitSnapshot(t, filepath.Join(withFlag, "site"))
	_, got := splitSnapshot(t, site)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replica command and build --registry-replica differ (-build +replica):\n%s", diff)
	}

	// A damaged signature: the release leaves the replica, exit 3.
	sig := filepath.Join(site, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_SHA256SUMS.sig")
	data, err := os.ReadFile(sig)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(sig, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, t.TempDir(), "replica", site)
	if code != ExitVerification || !strings.Contains(stderr, "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64: the kept SHA256SUMS signature does not verify") {
		t.Errorf("replica of a damaged tree: exit %d, want %d naming the package\n%s%s", code, ExitVerification, stdout, stderr)
	}
	doc := filepath.Join(site, "replica", "registry.opentofu.org", "v1", "providers", "hashicorp", "foo", "1.0.0")
	if _, err := os.Stat(doc); !os.IsNotExist(err) {
		t.Errorf("the replica still offers the damaged release: %v", err)
	}
	versions, err := os.ReadFile(filepath.Join(site, "replica", "registry.opentofu.org", "v1", "providers", "hashicorp", "foo", "versions"))
	if err != nil || strings.Contains(string(versions), `"1.0.0"`) || !strings.Contains(string(versions), `"1.1.0"`) {
		t.Errorf("versions document after the damage (%v):\n%s", err, versions)
	}

	if code, _, stderr := o.run(t, t.TempDir(), "replica", filepath.Join(t.TempDir(), "missing")); code != ExitUsage {
		t.Errorf("replica of a missing directory: exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
}

// The relative URLs of the download documents keep working when the site
// is published below a path prefix.
func TestReplicaUnderPathPrefix(t *testing.T) {
	o := replicaOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, replicaManifest+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build", "--registry-replica"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	// Serve dir (the site's parent): the site is at /site/.
	host := serveStatic(t, dir)
	base, err := url.JoinPath(host.url, "site", "replica", "registry.opentofu.org", "v1", "providers")
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	writeManifest(t, d, replicaManifest+`host "registry.opentofu.org" {
  services = { "providers.v1" = "`+base+`/" }
}
`)
	r := origin{reg: o.reg, environ: host.environ}
	if code, stdout, stderr := r.run(t, d, "build"); code != ExitOK {
		t.Fatalf("build from the replica below /site/: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, p := range host.requested() {
		if !strings.Contains(p, "/site/") {
			t.Errorf("request outside the prefix: %s", p)
		}
	}
}

// The replica points at a network mirror's files: a filesystem mirror
// cannot have one.
func TestReplicaNeedsNetworkLayout(t *testing.T) {
	o := replicaOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, replicaManifest+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr := o.run(t, dir, "build", "--registry-replica", "--layout", "packed")
	if code != ExitUsage || !strings.Contains(stderr, "--registry-replica needs --layout network") {
		t.Errorf("build --registry-replica --layout packed: exit %d, want %d\n%s%s", code, ExitUsage, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
		t.Errorf("the refused build wrote the site: %v", err)
	}
	if code, stdout, stderr := o.run(t, dir, "build", "--layout", "packed"); code != ExitOK {
		t.Fatalf("build --layout packed: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = o.run(t, dir, "replica", "site")
	if code != ExitUsage || !strings.Contains(stderr, "is a filesystem mirror") {
		t.Errorf("replica of a packed layout: exit %d, want %d\n%s%s", code, ExitUsage, stdout, stderr)
	}
}

// verify holds the registry replica's download documents to the mirror:
// one edited to send clients off-site is a problem (exit 3).
func TestVerifyChecksTheReplicaDownloads(t *testing.T) {
	o := replicaOrigin(t)
	dir := t.TempDir()
	writeManifest(t, dir, replicaManifest+o.hostBlock("registry.opentofu.org"))
	mustRun(t, o, dir, "build", "--registry-replica")
	site := filepath.Join(dir, "site")
	if out := mustRun(t, o, t.TempDir(), "verify", site); !strings.Contains(out, " 0 problems") {
		t.Fatalf("verify of the built mirror:\n%s", out)
	}
	var doc string
	err := filepath.WalkDir(filepath.Join(site, "replica"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && doc == "" && filepath.Base(filepath.Dir(filepath.Dir(p))) == "download" {
			doc = p
		}
		return err
	})
	if err != nil || doc == "" {
		t.Fatalf("no provider download document in the replica (%v)", err)
	}
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	d["download_url"] = "https://evil.example/provider.zip"
	edited, _ := json.Marshal(d)
	if err := os.WriteFile(doc, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
	if code != ExitVerification || !strings.Contains(stdout, "evil.example") {
		t.Errorf("verify of a replica sending clients off-site: exit %d, want %d naming it\n%s%s", code, ExitVerification, stdout, stderr)
	}
}

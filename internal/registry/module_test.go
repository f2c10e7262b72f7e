package registry_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/mirror"
)

func module(host addrs.Hostname, namespace, name, system string) addrs.Module {
	return addrs.Module{Host: host, Namespace: namespace, Name: name, TargetSystem: system}
}

func versionStrings(list addrs.VersionList) []string {
	out := []string{}
	for _, v := range list {
		out = append(out, v.String())
	}
	return out
}

// TestModulesFakeRegistry: discovery of a relative modules.v1 URL, the
// versions list, and locations given every way, through the fake registry.
func TestModulesFakeRegistry(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.AddModule("acme/net/aws", "1.0.0", "https://archives.example/net-1.0.0.tar.gz", false)
	reg.AddModule("acme/net/aws", "1.1.0", "git::https://example.com/net.git?ref=v1.1.0", true)
	reg.AddModule("acme/net/aws", "1.2.0", "./net-1.2.0.tgz", false)
	reg.AddModule("acme/net/aws", "1.3.0", "/files/net-1.3.0.zip", true)
	reg.AddModule("acme/net/aws", "1.4.0", "../../other/1.4.0.tgz", false)
	reg.AddModule("acme/net/aws", "2.0.0-beta1", "s3::https://s3.amazonaws.com/bucket/net.zip", false)
	c := newClient(t, ca, nil, map[addrs.Hostname]string{fakeHost(reg): token})
	m := module(fakeHost(reg), "acme", "net", "aws")
	before := len(reg.RequestLog())

	list, err := c.ModuleVersions(ctx(t), m)
	if err != nil {
		t.Fatalf("ModuleVersions: %v", err)
	}
	if diff := cmp.Diff([]string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "2.0.0-beta1"}, versionStrings(list)); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	download := reg.URL + "/v1/modules/acme/net/aws/"
	for _, tt := range []struct{ version, want string }{
		{"1.0.0", "https://archives.example/net-1.0.0.tar.gz"},         // body
		{"1.1.0", "git::https://example.com/net.git?ref=v1.1.0"},       // header on a 204
		{"1.2.0", download + "1.2.0/net-1.2.0.tgz"},                    // ./ resolved
		{"1.3.0", reg.URL + "/files/net-1.3.0.zip"},                    // / resolved, from the header
		{"1.4.0", reg.URL + "/v1/modules/acme/net/other/1.4.0.tgz"},    // ../ resolved
		{"2.0.0-beta1", "s3::https://s3.amazonaws.com/bucket/net.zip"}, // as written
	} {
		got, err := c.ModuleLocation(ctx(t), m, addrs.MustParseVersion(tt.version))
		if err != nil || got.Location != tt.want || got.Registry != m.Host || got.NamedAt != download+tt.version+"/download" {
			t.Errorf("ModuleLocation(%s) = %+v, %v; want %q named at %s by %s", tt.version, got, err, tt.want, download+tt.version+"/download", m.Host)
		}
	}

	log := reg.RequestLog()[before:]
	var paths []string
	for _, r := range log {
		paths = append(paths, r.Method+" "+r.Path)
		if r.Authorization != "Bearer "+token {
			t.Errorf("%s %s: Authorization %q, want the host's token", r.Method, r.Path, r.Authorization)
		}
	}
	want := []string{"GET " + fakeregistry.DiscoveryPath, "GET " + fakeregistry.ModuleVersionsPath("acme/net/aws")}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "2.0.0-beta1"} {
		want = append(want, "GET "+fakeregistry.ModuleDownloadPath("acme/net/aws", v))
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("requests (-want +got), discovery once:\n%s", diff)
	}

	// Provider calls share the cached discovery document.
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	if _, err := c.AvailableVersions(ctx(t), provider(fakeHost(reg), "hashicorp", "foo")); err != nil {
		t.Fatalf("AvailableVersions: %v", err)
	}
	if n := reg.RequestCount(fakeregistry.DiscoveryPath); n != 1 {
		t.Errorf("discovery requested %d times, want 1", n)
	}
}

// TestModuleErrors: unknown modules and versions, and failures of the
// registry, each named with the module, the version and the URL.
func TestModuleErrors(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.AddModule("acme/net/aws", "1.0.0", "./x.tgz", false)
	c := newClient(t, ca, nil, nil)
	host := fakeHost(reg)
	v1 := addrs.MustParseVersion("1.0.0")

	_, err := c.ModuleVersions(ctx(t), module(host, "acme", "nope", "aws"))
	wantErrContains(t, err, host.ForDisplay()+"/acme/nope/aws", reg.URL+fakeregistry.ModuleVersionsPath("acme/nope/aws"), "404")
	if !errors.Is(err, registry.ErrModuleUnknown) {
		t.Errorf("error %v does not wrap ErrModuleUnknown", err)
	}

	_, err = c.ModuleLocation(ctx(t), module(host, "acme", "net", "aws"), addrs.MustParseVersion("9.0.0"))
	wantErrContains(t, err, host.ForDisplay()+"/acme/net/aws version 9.0.0", reg.URL+fakeregistry.ModuleDownloadPath("acme/net/aws", "9.0.0"), "404")
	if errors.Is(err, registry.ErrModuleUnknown) {
		t.Errorf("a version missing from the download endpoint is not an unknown module: %v", err)
	}

	// Retries work for module calls too, 204 answers included.
	reg.AddModule("acme/net/aws", "1.1.0", "./y.tgz", true)
	reg.FailTimes(fakeregistry.ModuleDownloadPath("acme/net/aws", "1.1.0"), http.StatusServiceUnavailable, 2)
	reg.FailTimes(fakeregistry.ModuleVersionsPath("acme/net/aws"), http.StatusBadGateway, 1)
	if _, err := c.ModuleVersions(ctx(t), module(host, "acme", "net", "aws")); err != nil {
		t.Errorf("ModuleVersions after a 502: %v", err)
	}
	if got, err := c.ModuleLocation(ctx(t), module(host, "acme", "net", "aws"), addrs.MustParseVersion("1.1.0")); err != nil || !strings.HasSuffix(got.Location, "/1.1.0/y.tgz") {
		t.Errorf("ModuleLocation after two 503s = %q, %v", got, err)
	}

	// A relative location resolves against the download URL asked for, as
	// in OpenTofu, not against where a redirect led.
	reg.Redirect(fakeregistry.ModuleDownloadPath("acme/net/aws", "1.0.0"), fakeregistry.ModuleDownloadPath("acme/net/aws", "1.1.0"))
	if got, err := c.ModuleLocation(ctx(t), module(host, "acme", "net", "aws"), v1); err != nil || got.Location != reg.URL+"/v1/modules/acme/net/aws/1.0.0/y.tgz" {
		t.Errorf("ModuleLocation through a redirect = %q, %v", got, err)
	}
	reg.Reset()

	// An address that would leave the service's path is refused before
	// any request.
	before := len(reg.Requests())
	_, err = c.ModuleVersions(ctx(t), module(host, "..", "net", "aws"))
	wantErrContains(t, err, `invalid module address part ".."`)
	if len(reg.Requests()) != before {
		t.Errorf("requests were made for an invalid address: %v", reg.Requests()[before:])
	}

	// An oversized versions document is refused, not read to the end.
	reg.Oversize(fakeregistry.ModuleVersionsPath("acme/net/aws"), 1, 64<<20, true)
	_, err = c.ModuleVersions(ctx(t), module(host, "acme", "net", "aws"))
	if !errors.Is(err, httpx.ErrTooLarge) {
		t.Errorf("oversized versions list: %v, want ErrTooLarge", err)
	}
	reg.EndlessJSON(fakeregistry.ModuleDownloadPath("acme/net/aws", "1.0.0"))
	_, err = c.ModuleLocation(ctx(t), module(host, "acme", "net", "aws"), v1)
	if !errors.Is(err, httpx.ErrTooLarge) {
		t.Errorf("endless download answer: %v, want ErrTooLarge", err)
	}
	if n := reg.BytesServed(fakeregistry.ModuleVersionsPath("acme/net/aws")); n > 20<<20 {
		t.Errorf("%d bytes of the oversized document were served", n)
	}
}

// TestModuleDocuments: versions lists and download answers as a registry
// may send them, well formed or not.
func TestModuleDocuments(t *testing.T) {
	ca := testca.New(t)
	huge := `{"modules":[{"versions":[` + strings.Repeat(`{"version":"1.0.0"},`, 1<<20) + `{"version":"1.0.1"}]}]}`
	for _, tt := range []struct {
		name     string
		versions string // body of the versions answer
		status   int    // of the download answer; 0 is 200
		header   string // X-Terraform-Get of the download answer
		body     string // of the download answer
		want     string // the location, or the list of versions
		wantErr  string
		unknown  bool // the error wraps ErrModuleUnknown
	}{
		{name: "location in body", body: `{"location":"https://x.example/a.tgz"}`, want: "https://x.example/a.tgz"},
		{name: "body wins over header", header: "https://header.example/a.tgz", body: `{"location":"https://body.example/a.tgz"}`, want: "https://body.example/a.tgz"},
		{name: "header on 200 with {}", header: "git::https://x.example/a.git", body: `{}`, want: "git::https://x.example/a.git"},
		{name: "header on 200 with null location", header: "https://x.example/a.tgz", body: `{"location":null}`, want: "https://x.example/a.tgz"},
		{name: "header on 204", status: http.StatusNoContent, header: "./a.tgz", want: "https://HOST/v1/modules/acme/net/aws/1.0.0/a.tgz"},
		{name: "protocol-relative location", body: `{"location":"//cdn.example/a.tgz"}`, want: "https://cdn.example/a.tgz"},
		{name: "no location", body: `{}`, wantErr: `no location: the answer has neither a "location" nor an X-Terraform-Get header`},
		{name: "204 without header", status: http.StatusNoContent, wantErr: "no location"},
		{name: "empty body on 200", header: "https://x.example/a.tgz", wantErr: "parse JSON body"},
		{name: "location not a string", body: `{"location":5}`, wantErr: "parse JSON body"},
		{name: "malformed JSON", body: `{"location":`, wantErr: "parse JSON body"},
		{name: "bad relative location", body: `{"location":"/%zz"}`, wantErr: "invalid relative location"},
		{name: "HTML page", body: "<html>login</html>", wantErr: "HTML page instead of JSON"},
		{name: "other status", status: http.StatusAccepted, body: `{"location":"x"}`, wantErr: "202"},
		{name: "versions skip invalid ones", versions: `{"modules":[{"versions":[{"version":"1.0.0"},{"version":"banana"},{"version":"99999999999999999999999.0.0"},{"version":"2.0"}]},{"versions":[{"version":"3.0.0"}]}]}`, want: "1.0.0 2.0.0"},
		{name: "versions of a module without any", versions: `{"modules":[{"versions":[]}]}`, want: ""},
		{name: "versions list no module", versions: `{"modules":[]}`, wantErr: "it lists no module", unknown: true},
		{name: "versions malformed", versions: `{"modules":{}}`, wantErr: "parse versions list from https://HOST/v1/modules/acme/net/aws/versions"},
		{name: "versions huge", versions: huge, wantErr: "exceeds the limit"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/.well-known/terraform.json":
					serveJSON(`{"modules.v1":"/v1/modules/"}`)(w, r)
				case strings.HasSuffix(r.URL.Path, "/versions"):
					serveJSON(tt.versions)(w, r)
				default:
					if tt.header != "" {
						w.Header().Set("X-Terraform-Get", tt.header)
					}
					ct := "application/json"
					if strings.HasPrefix(tt.body, "<") {
						ct = "text/html"
					}
					w.Header().Set("Content-Type", ct)
					w.WriteHeader(max(tt.status, http.StatusOK))
					io.WriteString(w, tt.body)
				}
			}))
			c := newClient(t, ca, nil, nil)
			m := module(srv.Host, "acme", "net", "aws")
			var got string
			var err error
			if tt.versions != "" {
				var list addrs.VersionList
				list, err = c.ModuleVersions(ctx(t), m)
				got = strings.Join(versionStrings(list), " ")
			} else {
				var loc mirror.ModuleLocation
				loc, err = c.ModuleLocation(ctx(t), m, addrs.MustParseVersion("1.0.0"))
				got = loc.Location
			}
			host := strings.TrimPrefix(srv.URL, "https://")
			if tt.wantErr != "" {
				wantErrContains(t, err, strings.ReplaceAll(tt.wantErr, "HOST", host), srv.Host.ForDisplay()+"/acme/net/aws")
				if errors.Is(err, registry.ErrModuleUnknown) != tt.unknown {
					t.Errorf("errors.Is(%v, ErrModuleUnknown) = %v", err, !tt.unknown)
				}
				return
			}
			if err != nil || got != strings.ReplaceAll(tt.want, "HOST", host) {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestModuleDiscovery: an absolute modules.v1 URL on another host, a host
// block's modules.v1, a host without a module registry and one that names
// it over plain http.
func TestModuleDiscovery(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.AddModule("acme/net/aws", "1.0.0", "./a.tgz", false)
	other := newServer(t, ca, serveJSON(`{"modules.v1":"`+reg.ModulesURL+`"}`))
	c := newClient(t, ca, nil, map[addrs.Hostname]string{other.Host: token})
	m := module(other.Host, "acme", "net", "aws")
	list, err := c.ModuleVersions(ctx(t), m)
	if err != nil || len(list) != 1 {
		t.Fatalf("ModuleVersions through an absolute modules.v1: %v, %v", list, err)
	}
	loc, err := c.ModuleLocation(ctx(t), m, list[0])
	if err != nil || loc.Location != reg.ModulesURL+"acme/net/aws/1.0.0/a.tgz" {
		t.Errorf("ModuleLocation = %q, %v", loc, err)
	}
	// As OpenTofu does, the host's token goes to the API its discovery
	// document names.
	for _, r := range reg.RequestLog() {
		if r.Authorization != "Bearer "+token {
			t.Errorf("%s %s without the token", r.Method, r.Path)
		}
	}

	services := map[addrs.Hostname]map[string]string{"modules.example": {"modules.v1": reg.ModulesURL}}
	c = newClient(t, ca, services, nil)
	if _, err := c.ModuleVersions(ctx(t), module("modules.example", "acme", "net", "aws")); err != nil {
		t.Errorf("ModuleVersions with a host block: %v", err)
	}

	providersOnly := newServer(t, ca, serveJSON(`{"providers.v1":"/v1/providers/"}`))
	_, err = newClient(t, ca, nil, nil).ModuleVersions(ctx(t), module(providersOnly.Host, "acme", "net", "aws"))
	wantErrContains(t, err, "module "+providersOnly.Host.ForDisplay()+"/acme/net/aws: discover module registry of "+providersOnly.Host.ForDisplay(),
		"the host does not provide a module registry (modules.v1)")

	plain := newServer(t, ca, serveJSON(`{"modules.v1":"http://127.0.0.1:1/v1/modules/"}`))
	_, err = newClient(t, ca, nil, nil).ModuleLocation(ctx(t), module(plain.Host, "acme", "net", "aws"), addrs.MustParseVersion("1.0.0"))
	wantErrContains(t, err, "version 1.0.0", "its modules.v1 URL http://127.0.0.1:1/v1/modules/ is not https")
}

// moduleDocsTransport serves a whole module registry from memory.
type moduleDocsTransport struct {
	disco, versions, download []byte
	status                    int
	header                    string
}

func (d moduleDocsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, status := []byte(nil), http.StatusOK
	switch p := req.URL.Path; {
	case p == "/.well-known/terraform.json":
		body = d.disco
	case strings.HasSuffix(p, "/versions"):
		body = d.versions
	case strings.HasSuffix(p, "/download"):
		body, status = d.download, d.status
	}
	resp := &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}
	resp.Header.Set("X-Terraform-Get", d.header)
	return resp, nil
}

// FuzzModuleDocuments feeds whole module registry answers to the client:
// it returns an error or a result, never panics, and never returns an
// empty location.
func FuzzModuleDocuments(f *testing.F) {
	f.Add([]byte(`{"modules.v1":"/v1/modules/"}`), []byte(`{"modules":[{"versions":[{"version":"1.0.0"}]}]}`), []byte(`{"location":"./a.tgz"}`), uint16(200), "")
	f.Add([]byte(`{"modules.v1":"https://u:p@other.example/m/"}`), []byte(`{"modules":[]}`), []byte(``), uint16(204), "../x")
	f.Add([]byte(`{"modules.v1":"/"}`), []byte(`{"modules":[{"versions":[{"version":"99999999999999999999999"}]}]}`), []byte(`{}`), uint16(200), "/%zz")
	f.Fuzz(func(t *testing.T, disco, versions, download []byte, status uint16, header string) {
		st := int(status%400) + 200
		client := &http.Client{Transport: moduleDocsTransport{disco: disco, versions: versions, download: download, status: st, header: header}}
		policy := httpx.DefaultPolicy()
		policy.Retries = 0
		c := registry.New(registry.Config{Fetcher: httpx.NewFetcher(client, policy), Discovery: client})
		m := module("registry.example", "acme", "net", "aws")
		if list, err := c.ModuleVersions(t.Context(), m); err == nil {
			for _, v := range list {
				if _, err := addrs.ParseVersion(v.String()); err != nil {
					t.Fatalf("accepted version %q does not parse again: %v", v, err)
				}
			}
		}
		loc, err := c.ModuleLocation(t.Context(), m, addrs.MustParseVersion("1.0.0"))
		if err == nil && loc.Location == "" {
			t.Fatal("empty location without an error")
		}
	})
}

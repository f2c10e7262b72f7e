package registry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/mirror"
)

// TestFakeRegistry runs the tests that need a full registry against one
// shared fake registry (its OpenPGP key is slow to make).
func TestFakeRegistry(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	for _, tt := range []struct {
		name string
		test func(*testing.T, *testca.CA, *fakeregistry.Registry)
	}{
		{"discovery with relative service URL", testDiscoveryWithRelativeServiceURL},
		{"package meta and fetch", testPackageMetaAndFetch},
		{"unsigned and protocols", testPackageMetaUnsignedAndProtocols},
		{"unknown platform", testPackageMetaUnknownPlatform},
		{"services override skips discovery", testServicesOverrideSkipsDiscovery},
		{"canceled context", testCanceledContext},
	} {
		reg.Reset()
		t.Run(tt.name, func(t *testing.T) { tt.test(t, ca, reg) })
	}
}

// fakeHost is the fake registry's "127.0.0.1:PORT", which service discovery
// can reach at https://127.0.0.1:PORT/.well-known/terraform.json.
func fakeHost(reg *fakeregistry.Registry) addrs.Hostname {
	return addrs.Hostname(strings.TrimPrefix(reg.URL, "https://"))
}

func testDiscoveryWithRelativeServiceURL(t *testing.T, ca *testca.CA, reg *fakeregistry.Registry) {
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	reg.Add("hashicorp", "foo", "1.2.0", "linux_amd64")
	reg.Add("hashicorp", "foo", "2.0.0-beta1", "linux_amd64")
	before := len(reg.Requests())
	c := newClient(t, ca, nil, nil)
	p := provider(fakeHost(reg), "hashicorp", "foo")

	list, err := c.AvailableVersions(ctx(t), p)
	if err != nil {
		t.Fatalf("AvailableVersions: %v", err)
	}
	var got []string
	for _, v := range list {
		got = append(got, v.String())
	}
	if diff := cmp.Diff([]string{"1.0.0", "1.2.0", "2.0.0-beta1"}, got); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	// The discovery result is cached for later calls.
	if _, err := c.PackageMeta(ctx(t), p, addrs.MustParseVersion("1.0.0"), linuxAMD64); err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}
	want := []string{
		"GET /.well-known/terraform.json",
		"GET /v1/providers/hashicorp/foo/versions",
		"GET /v1/providers/hashicorp/foo/1.0.0/download/linux/amd64",
	}
	if diff := cmp.Diff(want, reg.Requests()[before:]); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func testPackageMetaAndFetch(t *testing.T, ca *testca.CA, reg *fakeregistry.Registry) {
	reg.Add("hashicorp", "bar", "1.0.0", "linux_amd64", "darwin_arm64")
	c := newClient(t, ca, nil, nil)
	p := provider(fakeHost(reg), "hashicorp", "bar")

	meta, err := c.PackageMeta(ctx(t), p, addrs.MustParseVersion("1.0.0"), addrs.Platform{OS: "darwin", Arch: "arm64"})
	if err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}
	base := reg.URL + "/releases/hashicorp/bar/1.0.0/"
	if got, want := meta.Filename, "terraform-provider-bar_1.0.0_darwin_arm64.zip"; got != want {
		t.Errorf("Filename = %q, want %q", got, want)
	}
	for _, u := range []struct{ name, got, want string }{
		{"Archive", registry.LocationURL(meta.Archive).String(), base + "terraform-provider-bar_1.0.0_darwin_arm64.zip"},
		{"Sums", registry.LocationURL(meta.Sums).String(), base + "terraform-provider-bar_1.0.0_SHA256SUMS"},
		{"Signature", registry.LocationURL(meta.Signature).String(), base + "terraform-provider-bar_1.0.0_SHA256SUMS.sig"},
	} {
		if u.got != u.want {
			t.Errorf("%s = %s, want %s", u.name, u.got, u.want)
		}
	}
	archive := reg.Archive("hashicorp", "bar", "1.0.0", "darwin_arm64")
	if meta.SHA256 != sha256.Sum256(archive) {
		t.Errorf("SHA256 = %x, want the archive's %x", meta.SHA256, sha256.Sum256(archive))
	}
	if diff := cmp.Diff([]string{reg.ArmoredKey}, meta.SigningKeys); diff != "" {
		t.Errorf("SigningKeys (-want +got):\n%s", diff)
	}

	got, err := fetch(t, meta.Archive)
	if err != nil {
		t.Fatalf("Fetch archive: %v", err)
	}
	if !bytes.Equal(got, archive) {
		t.Errorf("Fetch archive: got %d bytes that differ from the served archive", len(got))
	}
	got, err = fetch(t, meta.Sums)
	if err != nil {
		t.Fatalf("Fetch SHA256SUMS: %v", err)
	}
	if want := reg.SHA256SUMS("hashicorp", "bar", "1.0.0"); !bytes.Equal(got, want) {
		t.Errorf("Fetch SHA256SUMS = %q, want %q", got, want)
	}
}

func testPackageMetaUnsignedAndProtocols(t *testing.T, ca *testca.CA, reg *fakeregistry.Registry) {
	reg.AddWithOptions("acme", "six", "1.0.0", fakeregistry.Options{Unsigned: true, Protocols: []string{"6.0"}}, "linux_amd64")
	reg.AddWithOptions("acme", "four", "1.0.0", fakeregistry.Options{Protocols: []string{"4.0"}}, "linux_amd64")
	c := newClient(t, ca, nil, nil)

	meta, err := c.PackageMeta(ctx(t), provider(fakeHost(reg), "acme", "six"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
	if err != nil {
		t.Fatalf("PackageMeta: %v", err)
	}
	if len(meta.SigningKeys) != 0 {
		t.Errorf("SigningKeys = %q, want none", meta.SigningKeys)
	}
	_, err = c.PackageMeta(ctx(t), provider(fakeHost(reg), "acme", "four"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
	wantErrContains(t, err, "plugin protocols 4.0")
}

func testPackageMetaUnknownPlatform(t *testing.T, ca *testca.CA, reg *fakeregistry.Registry) {
	reg.Add("hashicorp", "baz", "1.0.0", "linux_amd64")
	c := newClient(t, ca, nil, nil)
	p := provider(fakeHost(reg), "hashicorp", "baz")

	for _, tt := range []struct {
		version string
		plat    addrs.Platform
	}{
		{"1.0.0", addrs.Platform{OS: "windows", Arch: "amd64"}},
		{"9.9.9", linuxAMD64},
	} {
		_, err := c.PackageMeta(ctx(t), p, addrs.MustParseVersion(tt.version), tt.plat)
		if !errors.Is(err, mirror.ErrPlatformUnavailable) {
			t.Errorf("PackageMeta(%s, %s) error = %v, want ErrPlatformUnavailable", tt.version, tt.plat, err)
		}
	}
}

func testServicesOverrideSkipsDiscovery(t *testing.T, ca *testca.CA, reg *fakeregistry.Registry) {
	reg.Add("hashicorp", "qux", "1.0.0", "linux_amd64")

	tests := []struct {
		name    string
		host    addrs.Hostname
		service func(reg *fakeregistry.Registry) string
	}{
		// The public registry's name is never looked up: nothing leaves 127.0.0.1.
		{"absolute URL", "registry.opentofu.org", func(r *fakeregistry.Registry) string { return r.ServicesURL }},
		{"no trailing slash", "registry.opentofu.org", func(r *fakeregistry.Registry) string { return r.URL + "/v1/providers" }},
		// Relative URLs resolve against https://<host>/.well-known/terraform.json.
		{"relative URL", fakeHost(reg), func(*fakeregistry.Registry) string { return "/v1/providers/" }},
		{"relative URL without trailing slash", fakeHost(reg), func(*fakeregistry.Registry) string { return "../v1/providers" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(reg.Requests())
			services := map[addrs.Hostname]map[string]string{tt.host: {"providers.v1": tt.service(reg)}}
			c := newClient(t, ca, services, nil)
			p := provider(tt.host, "hashicorp", "qux")
			list, err := c.AvailableVersions(ctx(t), p)
			if err != nil {
				t.Fatalf("AvailableVersions: %v", err)
			}
			if len(list) != 1 || list[0].String() != "1.0.0" {
				t.Errorf("versions = %v, want [1.0.0]", list)
			}
			meta, err := c.PackageMeta(ctx(t), p, addrs.MustParseVersion("1.0.0"), linuxAMD64)
			if err != nil {
				t.Fatalf("PackageMeta: %v", err)
			}
			if !strings.HasPrefix(registry.LocationURL(meta.Archive).String(), reg.URL+"/releases/") {
				t.Errorf("Archive = %s, want one on the fake registry", meta.Archive)
			}
			got := reg.Requests()[before:]
			want := []string{
				"GET /v1/providers/hashicorp/qux/versions",
				"GET /v1/providers/hashicorp/qux/1.0.0/download/linux/amd64",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDiscoveryFollowsRedirectAndResolvesAgainstFinalURL(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	mux := http.NewServeMux()
	mux.Handle("GET /.well-known/terraform.json", http.RedirectHandler("/moved/here/terraform.json", http.StatusFound))
	mux.Handle("GET /moved/here/terraform.json", serveJSON(`{"providers.v1": "../api/", "modules.v1": "/modules/"}`))
	mux.Handle("GET /moved/api/acme/foo/versions", serveJSON(`{"versions":[{"version":"0.1.0"},{"version":"0.2.0"}]}`))
	srv := newServer(t, ca, mux)
	c := newClient(t, ca, nil, nil)

	list, err := c.AvailableVersions(ctx(t), provider(srv.Host, "acme", "foo"))
	if err != nil {
		t.Fatalf("AvailableVersions: %v", err)
	}
	if len(list) != 2 {
		t.Errorf("versions = %v, want 2", list)
	}
	want := []string{
		"GET /.well-known/terraform.json",
		"GET /moved/here/terraform.json",
		"GET /moved/api/acme/foo/versions",
	}
	if diff := cmp.Diff(want, srv.paths()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := srv.requests()[0].Accept; got != "application/json" {
		t.Errorf("discovery Accept = %q, want application/json", got)
	}
}

func TestDiscoveryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.Handler
		want    []string
	}{
		{
			name:    "wrong content type",
			handler: serveAs("text/plain", `{"providers.v1": "/v1/providers/"}`),
			want:    []string{"discover provider registry of 127.0.0.1:", `unsupported Content-Type "text/plain"`},
		},
		{
			name:    "malformed content type",
			handler: serveAs("application/json; =bad", `{"providers.v1": "/v1/providers/"}`),
			want:    []string{"malformed Content-Type"},
		},
		{
			name:    "not found",
			handler: http.NotFoundHandler(),
			want:    []string{"discover provider registry of 127.0.0.1:", "does not provide a provider registry (providers.v1)"},
		},
		{
			name:    "no providers service",
			handler: serveJSON(`{"modules.v1": "/modules/"}`),
			want:    []string{"does not provide a provider registry (providers.v1)"},
		},
		{
			name:    "only another protocol version",
			handler: serveJSON(`{"providers.v2": "/v2/providers/"}`),
			want:    []string{"speaks a protocol version tfmirror does not support"},
		},
		{
			name:    "server error",
			handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }),
			want:    []string{"500 Internal Server Error"},
		},
		{
			name:    "not JSON",
			handler: serveJSON(`<html>`),
			want:    []string{"failed to decode discovery document"},
		},
		{
			name:    "service URL with credentials",
			handler: serveJSON(`{"providers.v1": "https://user:secret@127.0.0.1/v1/providers/"}`),
			want:    []string{"username/password"},
		},
		{
			name:    "service URL with unsupported scheme",
			handler: serveJSON(`{"providers.v1": "ftp://127.0.0.1/v1/providers/"}`),
			want:    []string{"unsupported scheme ftp"},
		},
		{
			// svchost/disco reports a present but non-string entry as an
			// unsupported version, like OpenTofu.
			name:    "service URL is not a string",
			handler: serveJSON(`{"providers.v1": 42}`),
			want:    []string{"does not support providers version 1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca := testca.New(t)
			srv := newServer(t, ca, tt.handler)
			c := newClient(t, ca, nil, nil)
			_, err := c.AvailableVersions(ctx(t), provider(srv.Host, "acme", "foo"))
			wantErrContains(t, err, tt.want...)
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

func TestDiscoveryTooManyRedirects(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	srv := newServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path+"x", http.StatusFound)
	}))
	c := newClient(t, ca, nil, nil)
	_, err := c.AvailableVersions(ctx(t), provider(srv.Host, "acme", "foo"))
	wantErrContains(t, err, "stopped after 3 redirects")
}

func TestAvailableVersions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want []string
		err  []string
	}{
		{
			name: "versions with extra fields",
			body: `{"versions":[{"version":"1.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"}]},{"version":"1.1.0-rc1"}],"warnings":["deprecated"]}`,
			want: []string{"1.0.0", "1.1.0-rc1"},
		},
		{name: "no versions", body: `{"versions":[]}`, want: []string{}},
		{name: "bad version", body: `{"versions":[{"version":"1.0.0"},{"version":"latest"}]}`, err: []string{"versions list from https://127.0.0.1:", `invalid version "latest"`}},
		{name: "not JSON", body: `versions: 1.0.0`, err: []string{"parse versions list from https://127.0.0.1:"}},
		{name: "wrong shape", body: `{"versions":{"1.0.0":{}}}`, err: []string{"parse versions list"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca := testca.New(t)
			srv := newServer(t, ca, serveJSON(tt.body))
			c := newClient(t, ca, map[addrs.Hostname]map[string]string{"registry.example.com": {"providers.v1": srv.URL + "/"}}, nil)
			list, err := c.AvailableVersions(ctx(t), provider("registry.example.com", "acme", "foo"))
			if tt.err != nil {
				wantErrContains(t, err, tt.err...)
				return
			}
			if err != nil {
				t.Fatalf("AvailableVersions: %v", err)
			}
			got := []string{}
			for _, v := range list {
				got = append(got, v.String())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"GET /acme/foo/versions"}, srv.paths()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPIStatusErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		token  string
		want   []string
	}{
		{"not found", http.StatusNotFound, "", []string{"the registry at my-registry.example.com does not know provider my-registry.example.com/acme/foo"}},
		{"unauthorized", http.StatusUnauthorized, "", []string{"401 Unauthorized", `set a token with a credentials "my-registry.example.com" block`, "TF_TOKEN_my__registry_example_com"}},
		{"forbidden", http.StatusForbidden, "", []string{"403 Forbidden", "TF_TOKEN_my__registry_example_com"}},
		{"token refused", http.StatusForbidden, "s3cr3t-qa-token", []string{"403 Forbidden", "the registry refused the token tfmirror sent", "TF_TOKEN_my__registry_example_com"}},
		{"server error", http.StatusBadGateway, "", []string{"/acme/foo/versions returned 502 Bad Gateway"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca := testca.New(t)
			srv := newServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "no", tt.status)
			}))
			host := addrs.Hostname("my-registry.example.com")
			var tokens map[addrs.Hostname]string
			if tt.token != "" {
				tokens = map[addrs.Hostname]string{host: tt.token}
			}
			c := newClient(t, ca, map[addrs.Hostname]map[string]string{host: {"providers.v1": srv.URL + "/"}}, tokens)
			_, err := c.AvailableVersions(ctx(t), provider(host, "acme", "foo"))
			wantErrContains(t, err, tt.want...)
			if tt.token != "" && strings.Contains(err.Error(), tt.token) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

func TestAPIRejectsHTML(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	srv := newServer(t, ca, serveAs("text/html; charset=utf-8", `<html><body>Please log in</body></html>`))
	c := newClient(t, ca, map[addrs.Hostname]map[string]string{"registry.example.com": {"providers.v1": srv.URL + "/v1/"}}, nil)
	p := provider("registry.example.com", "acme", "foo")

	_, err := c.AvailableVersions(ctx(t), p)
	wantErrContains(t, err, srv.URL+"/v1/acme/foo/versions returned an HTML page instead of JSON")
	_, err = c.PackageMeta(ctx(t), p, addrs.MustParseVersion("1.0.0"), linuxAMD64)
	wantErrContains(t, err, srv.URL+"/v1/acme/foo/1.0.0/download/linux/amd64 returned an HTML page instead of JSON")
}

func TestAPIDocumentSizeLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		handler http.HandlerFunc
		call    func(context.Context, *registry.Client, addrs.Provider) error
	}{
		{
			name: "versions announced too large",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(16<<20+1))
				w.WriteHeader(http.StatusOK)
			},
			call: versionsCall,
		},
		{
			name: "download document announced too large",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", fmt.Sprint(1<<20+1))
				w.WriteHeader(http.StatusOK)
			},
			call: downloadCall,
		},
		{
			name: "download document streamed too large",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"os":"linux","arch":"amd64","filename":"`))
				w.Write(bytes.Repeat([]byte("a"), 1<<20))
				w.Write([]byte(`"}`))
			},
			call: downloadCall,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca := testca.New(t)
			srv := newServer(t, ca, tt.handler)
			c := newClient(t, ca, map[addrs.Hostname]map[string]string{"registry.example.com": {"providers.v1": srv.URL + "/"}}, nil)
			err := tt.call(ctx(t), c, provider("registry.example.com", "acme", "foo"))
			wantErrContains(t, err, "exceeds the limit")
		})
	}
}

func versionsCall(ctx context.Context, c *registry.Client, p addrs.Provider) error {
	_, err := c.AvailableVersions(ctx, p)
	return err
}

func downloadCall(ctx context.Context, c *registry.Client, p addrs.Provider) error {
	v, _ := addrs.ParseVersion("1.0.0")
	_, err := c.PackageMeta(ctx, p, v, linuxAMD64)
	return err
}

func TestDocumentsAtTheLimitAreAccepted(t *testing.T) {
	t.Parallel()
	// A download document of exactly 1 MiB is fine.
	ca := testca.New(t)
	doc := `{"os":"linux","arch":"amd64","filename":"f.zip","download_url":"f.zip","shasums_url":"s","shasums_signature_url":"s.sig","shasum":"` + strings.Repeat("ab", 32) + `"}`
	doc += strings.Repeat(" ", 1<<20-len(doc))
	srv := newServer(t, ca, serveJSON(doc))
	c := newClient(t, ca, map[addrs.Hostname]map[string]string{"registry.example.com": {"providers.v1": srv.URL + "/"}}, nil)
	if err := downloadCall(ctx(t), c, provider("registry.example.com", "acme", "foo")); err != nil {
		t.Fatalf("PackageMeta with a 1 MiB document: %v", err)
	}
}

func TestTokenVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host addrs.Hostname
		want string
	}{
		{"example.com", "TF_TOKEN_example_com"},
		{"my-registry.example.com", "TF_TOKEN_my__registry_example_com"},
		{"xn--caf-dma.fr", "TF_TOKEN_xn____caf__dma_fr"},
		{"localhost:8443", "TF_TOKEN_localhost:8443"},
	}
	for _, tt := range tests {
		got := registry.TokenVariable(tt.host)
		if got != tt.want {
			t.Errorf("TokenVariable(%s) = %q, want %q", tt.host, got, tt.want)
		}
		// The variable named is one the manifest loader reads back.
		tokens := config.TokensFromEnv([]string{got + "=tok"})
		if tokens[tt.host] != "tok" || len(tokens) != 1 {
			t.Errorf("TokensFromEnv(%s=tok) = %v, want {%s: tok}", got, tokens, tt.host)
		}
	}
}

func TestCredentialsOnlyOnAPIRequests(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	sum := sha256.Sum256([]byte("archive"))
	mux := http.NewServeMux()
	mux.Handle("GET /.well-known/terraform.json", serveJSON(`{"providers.v1": "/v1/providers/"}`))
	mux.Handle("GET /v1/providers/acme/foo/versions", serveJSON(`{"versions":[{"version":"1.0.0"}]}`))
	mux.Handle("GET /v1/providers/acme/foo/1.0.0/download/linux/amd64", serveJSON(fmt.Sprintf(`{
		"protocols": ["5.0"], "os": "linux", "arch": "amd64",
		"filename": "terraform-provider-foo_1.0.0_linux_amd64.zip",
		"download_url": "/files/foo.zip",
		"shasums_url": "/files/SHA256SUMS",
		"shasums_signature_url": "/files/SHA256SUMS.sig",
		"shasum": "%x"}`, sum)))
	mux.Handle("GET /files/foo.zip", serveAs("application/zip", "archive"))
	mux.Handle("GET /files/SHA256SUMS", serveAs("text/plain", fmt.Sprintf("%x  terraform-provider-foo_1.0.0_linux_amd64.zip\n", sum)))
	mux.Handle("GET /files/SHA256SUMS.sig", serveAs("application/octet-stream", "sig"))
	srv := newServer(t, ca, mux)

	for _, tok := range []string{"s3cret", ""} {
		t.Run(fmt.Sprintf("token %q", tok), func(t *testing.T) {
			tokens := map[addrs.Hostname]string{"other.example.com": "not-this-one"}
			if tok != "" {
				tokens[srv.Host] = tok
			}
			before := len(srv.requests())
			c := newClient(t, ca, nil, tokens)
			p := provider(srv.Host, "acme", "foo")
			if _, err := c.AvailableVersions(ctx(t), p); err != nil {
				t.Fatalf("AvailableVersions: %v", err)
			}
			meta, err := c.PackageMeta(ctx(t), p, addrs.MustParseVersion("1.0.0"), linuxAMD64)
			if err != nil {
				t.Fatalf("PackageMeta: %v", err)
			}
			for _, loc := range []mirror.Location{meta.Archive, meta.Sums, meta.Signature} {
				if _, err := fetch(t, loc); err != nil {
					t.Fatalf("Fetch %s: %v", loc, err)
				}
			}

			bearer := ""
			if tok != "" {
				bearer = "Bearer " + tok
			}
			want := []request{
				// Discovery carries the host's credentials, as in OpenTofu.
				{"GET", "/.well-known/terraform.json", bearer, "tfmirror-test", "application/json"},
				{"GET", "/v1/providers/acme/foo/versions", bearer, "tfmirror-test", "application/json"},
				{"GET", "/v1/providers/acme/foo/1.0.0/download/linux/amd64", bearer, "tfmirror-test", "application/json"},
				// Archives and checksums are fetched anonymously.
				{"GET", "/files/foo.zip", "", "tfmirror-test", ""},
				{"GET", "/files/SHA256SUMS", "", "tfmirror-test", ""},
				{"GET", "/files/SHA256SUMS.sig", "", "tfmirror-test", ""},
			}
			if diff := cmp.Diff(want, srv.requests()[before:]); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFetch(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	payload := bytes.Repeat([]byte("0123456789"), 10000)
	mux := http.NewServeMux()
	mux.Handle("GET /ok", serveAs("application/zip", string(payload)))
	mux.HandleFunc("GET /short", func(w http.ResponseWriter, _ *http.Request) {
		// Announce more than is sent, then drop the connection.
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		w.Write(payload[:400])
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			t.Errorf("flush: %v", err)
			return
		}
		conn, _, err := rc.Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	})
	mux.Handle("GET /gone", http.NotFoundHandler())
	srv := newServer(t, ca, mux)
	c := newClient(t, ca, nil, nil)

	got, err := fetch(t, c.FileLocation(mustURL(t, srv.URL+"/ok")))
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("Fetch: got %d bytes, want the %d served", len(got), len(payload))
	}

	_, err = fetch(t, c.FileLocation(mustURL(t, srv.URL+"/short")))
	wantErrContains(t, err, "read "+srv.URL+"/short", "unexpected EOF")

	_, err = fetch(t, c.FileLocation(mustURL(t, "https://user:pa55word@"+string(srv.Host)+"/gone")))
	wantErrContains(t, err, "/gone returned 404 Not Found")
	if strings.Contains(err.Error(), "pa55word") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func testCanceledContext(t *testing.T, ca *testca.CA, reg *fakeregistry.Registry) {
	reg.Add("hashicorp", "quux", "1.0.0", "linux_amd64")
	c := newClient(t, ca, map[addrs.Hostname]map[string]string{"registry.opentofu.org": {"providers.v1": reg.ServicesURL}}, nil)
	cctx, cancel := context.WithCancel(ctx(t))
	cancel()
	_, err := c.AvailableVersions(cctx, provider("registry.opentofu.org", "hashicorp", "quux"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("AvailableVersions with a canceled context: %v, want context.Canceled", err)
	}
	if slices.Contains(reg.Requests(), "GET /v1/providers/hashicorp/quux/versions") {
		t.Errorf("a request was sent despite the canceled context")
	}
}

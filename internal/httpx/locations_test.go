package httpx_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// fakeDNS resolves the names of names and no other.
func fakeDNS(names map[string]string) func(ctx context.Context, network, host string) ([]netip.Addr, error) {
	return func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
}

// TestLocationsCheck: a location on its namer's own origin is fine; one
// elsewhere is refused over plain http and on a loopback, private,
// link-local, unspecified or CGNAT address (literal, localhost, or a name
// resolving to one), unless its host (or host:port) is allowed; an
// OwnOnly namer (a network mirror) may name no other origin at all.
func TestLocationsCheck(t *testing.T) {
	httpx.SetLookup(t, fakeDNS(map[string]string{
		"public.example": "93.184.216.34", "inside.example": "10.1.2.3", "meta.example": "169.254.169.254",
	}))
	registry := httpx.Namer{Name: "registry.test", Kind: "registry", Own: []*url.URL{mustURL(t, "https://127.0.0.1:8443/v1/modules/x/download"), mustURL(t, "https://registry.test")}}
	mirror := httpx.Namer{Name: "https://127.0.0.1:8444/", Kind: "network mirror", Own: []*url.URL{mustURL(t, "https://127.0.0.1:8444/")}, OwnOnly: true}
	allow := httpx.Locations{Allowed: []string{"127.0.0.1:9000", "artifacts.internal", "[::1]:9001"}}
	for _, tt := range []struct {
		name   string
		rule   httpx.Locations
		by     httpx.Namer
		url    string
		refuse string // "" for accepted
	}{
		{"the registry's own origin", httpx.Locations{}, registry, "https://127.0.0.1:8443/files/m.zip", ""},
		{"the registry's name", httpx.Locations{}, registry, "https://registry.test/files/m.zip", ""},
		{"a public host", httpx.Locations{}, registry, "https://public.example/m.zip", ""},
		{"a name that does not resolve", httpx.Locations{}, registry, "https://nowhere.example/m.zip", ""},
		{"another port of the registry's address", httpx.Locations{}, registry, "https://127.0.0.1:9000/m.zip", "127.0.0.1 is a loopback"},
		{"plain http to loopback", httpx.Locations{}, registry, "http://127.0.0.1:9000/m.zip", "plain http"},
		{"plain http to a public host", httpx.Locations{}, registry, "http://public.example/m.zip", "plain http"},
		{"localhost", httpx.Locations{}, registry, "https://localhost:9000/m.zip", "loopback name"},
		{"a .localhost name", httpx.Locations{}, registry, "https://svc.localhost/m.zip", "loopback name"},
		{"IPv6 loopback", httpx.Locations{}, registry, "https://[::1]:9001/m.zip", "::1 is a loopback"},
		{"a private address", httpx.Locations{}, registry, "https://10.0.0.7/m.zip", "10.0.0.7 is a loopback, link-local, private"},
		{"the metadata service", httpx.Locations{}, registry, "https://169.254.169.254/latest", "169.254.169.254"},
		{"CGNAT", httpx.Locations{}, registry, "https://100.100.100.200/latest", "100.100.100.200"},
		{"unspecified", httpx.Locations{}, registry, "https://0.0.0.0:9000/m.zip", "0.0.0.0"},
		{"a name resolving to a private address", httpx.Locations{}, registry, "https://inside.example/m.zip", "resolves to 10.1.2.3"},
		{"a name resolving to link-local", httpx.Locations{}, registry, "https://meta.example/m.zip", "resolves to 169.254.169.254"},
		{"allowed host:port, plain http", allow, registry, "http://127.0.0.1:9000/m.zip", ""},
		{"allowed host:port, another port", allow, registry, "http://127.0.0.1:9002/m.zip", "plain http"},
		{"allowed host, any port", allow, registry, "http://artifacts.internal:8080/m.zip", ""},
		{"allowed IPv6 host:port", allow, registry, "https://[::1]:9001/m.zip", ""},
		{"the mirror's own origin", httpx.Locations{}, mirror, "https://127.0.0.1:8444/x/a.zip", ""},
		{"a mirror naming a public host", httpx.Locations{}, mirror, "https://public.example/a.zip", "not on the network mirror's own origin"},
		{"a mirror naming another port", httpx.Locations{}, mirror, "https://127.0.0.1:8445/a.zip", "not on the network mirror's own origin"},
		{"a mirror naming plain http on its host", httpx.Locations{}, mirror, "http://127.0.0.1:8444/a.zip", "not on the network mirror's own origin"},
		{"a mirror naming an allowed host", allow, mirror, "https://artifacts.internal/a.zip", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := mustURL(t, tt.url)
			err := tt.rule.Check(t.Context(), tt.by, u)
			if tt.refuse == "" {
				if err != nil {
					t.Errorf("Check(%s) = %v, want nil", tt.url, err)
				}
				return
			}
			var le *httpx.LocationError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.refuse) {
				t.Fatalf("Check(%s) = %v, want a LocationError saying %q", tt.url, err, tt.refuse)
			}
			for _, want := range []string{httpx.Redact(u), tt.by.Name, "allowed_location_hosts", `"` + net.JoinHostPort(u.Hostname(), portOr(u)) + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal does not name %q:\n%v", want, err)
				}
			}
		})
	}
}

func portOr(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "http" {
		return "80"
	}
	return "443"
}

// TestLocationsCheckRedacts: a refused presigned URL is shown redacted;
// another scheme than http and https is refused whoever owns it.
func TestLocationsCheckRedacts(t *testing.T) {
	by := httpx.Namer{Name: "registry.test", Kind: "registry", Own: []*url.URL{mustURL(t, "ftp://public.example")}}
	if err := (httpx.Locations{Allowed: []string{"public.example"}}).Check(t.Context(), by, mustURL(t, "ftp://public.example/m.zip")); err == nil || !strings.Contains(err.Error(), `scheme "ftp"`) {
		t.Errorf("an ftp location: %v", err)
	}
	err := httpx.Locations{}.Check(t.Context(), by, mustURL(t, "http://user:pw@127.0.0.1:9/m.zip?X-Amz-Signature=SECRET"))
	if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "pw") {
		t.Errorf("refusal %v shows a secret (or nothing was refused)", err)
	}
}

// TestMayCarryCredentials: a host's credentials go to a location on it
// that its namer owns, or that a namer the rule lists for the host names.
func TestMayCarryCredentials(t *testing.T) {
	reg := httpx.Namer{Name: "registry.test", Own: []*url.URL{mustURL(t, "https://registry.test")}}
	rule := httpx.Locations{CredentialsFrom: map[string][]string{"code.example": {"registry.test"}}}
	for _, tt := range []struct {
		rule httpx.Locations
		url  string
		key  string
		want bool
	}{
		{httpx.Locations{}, "https://registry.test/m.zip", "registry.test", true},
		{httpx.Locations{}, "https://code.example/m.zip", "code.example", false},
		{rule, "https://code.example/m.zip", "code.example", true},
		{rule, "https://other.example/m.zip", "other.example", false},
	} {
		if got := tt.rule.MayCarryCredentials(reg, mustURL(t, tt.url), tt.key); got != tt.want {
			t.Errorf("MayCarryCredentials(%s) under %+v = %v, want %v", tt.url, tt.rule, got, tt.want)
		}
	}
}

// TestLocationRedirects: a location on its namer's own origin that
// redirects to a loopback service on another port is refused there,
// before anything is asked of it; the same redirect of a request that is
// not a location (the user's own URL) is followed.
func TestLocationRedirects(t *testing.T) {
	ca := testca.New(t)
	var reached atomic.Int32
	inside := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte("secret"))
	}))
	origin := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inside.URL+"/secret", http.StatusFound)
	}))
	f, _ := fetcherFor(t, ca, testPolicy())
	by := httpx.Namer{Name: "registry.test", Kind: "registry", Own: []*url.URL{mustURL(t, origin.URL)}}
	ctx := httpx.WithLocation(t.Context(), httpx.Locations{}, by)
	var sink memSink
	err := f.Fetch(ctx, mustURL(t, origin.URL+"/m.zip"), nil, &sink)
	var le *httpx.LocationError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "refused a redirect") || reached.Load() != 0 {
		t.Fatalf("Fetch of a location redirecting to loopback: %v (the service was reached %d times), want a refused redirect", err, reached.Load())
	}
	sink.Reset()
	if err := f.Fetch(t.Context(), mustURL(t, origin.URL+"/m.zip"), nil, &sink); err != nil || sink.String() != "secret" {
		t.Errorf("Fetch of the user's own URL: %q, %v", sink.String(), err)
	}
	// allowed, the redirect is followed under the rule too
	allowed := httpx.Locations{Allowed: []string{strings.TrimPrefix(inside.URL, "https://")}}
	sink.Reset()
	if err := f.Fetch(httpx.WithLocation(t.Context(), allowed, by), mustURL(t, origin.URL+"/m.zip"), nil, &sink); err != nil {
		t.Errorf("Fetch with the host allowed: %v", err)
	}
}

func TestParseHostPattern(t *testing.T) {
	for _, tt := range []struct{ in, host, port string }{
		{"Example.COM", "example.com", ""},
		{"example.com:8443", "example.com", "8443"},
		{"127.0.0.1:80", "127.0.0.1", "80"},
		{"::1", "::1", ""},
		{"[::1]:9000", "::1", "9000"},
	} {
		h, p, err := httpx.ParseHostPattern(tt.in)
		if err != nil || h != tt.host || p != tt.port {
			t.Errorf("ParseHostPattern(%q) = %q, %q, %v; want %q, %q", tt.in, h, p, err, tt.host, tt.port)
		}
	}
	for _, bad := range []string{"", "https://example.com", "example.com/x", "user@example.com", "example.com:0", "example.com:99999", "example.com:x", "[::1]", "a b"} {
		if _, _, err := httpx.ParseHostPattern(bad); err == nil {
			t.Errorf("ParseHostPattern(%q) accepted", bad)
		}
	}
}

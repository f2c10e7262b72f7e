package registry_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

const token = "sekrit-registry-token"

// loopbackClient is a registry client trusting ca, with token for host,
// whose connections all go to 127.0.0.1 (so fakeregistry.UnresolvableHost
// and its subdomain reach the fake registry).
func loopbackClient(t *testing.T, ca *testca.CA, host addrs.Hostname) *registry.Client {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	tr, err := httpx.NewTransport(httpx.Environment{CAFile: caFile}, httpx.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
	}
	t.Cleanup(tr.CloseIdleConnections)
	return registry.New(registry.Config{
		Fetcher:   httpx.NewFetcher(httpx.NewClient(tr, "tfmirror-test", httpx.MaxRedirects, 10*time.Second), fastPolicy()),
		Discovery: httpx.NewClient(tr, "tfmirror-test", 3, 10*time.Second),
		Tokens:    map[addrs.Hostname]string{host: token},
	})
}

// TestTokenStaysOnItsHostOverHTTPS: in each case a hostile registry lures
// the token somewhere else; the request fails or goes on without it, and
// the token reaches no other scheme, host or port.
func TestTokenStaysOnItsHostOverHTTPS(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	reg.Add("hashicorp", "bar", "2.0.0", "linux_amd64")
	port := reg.URL[strings.LastIndex(reg.URL, ":")+1:]
	plain := reg.PlainURL()
	origin := addrs.Hostname(fakeregistry.UnresolvableHost + ":" + port)
	evil := fakeregistry.UnresolvableSubdomain + ":" + port
	versions := fakeregistry.VersionsPath("hashicorp", "foo")

	for _, tt := range []struct {
		name   string
		host   addrs.Hostname
		inject func()
		want   string // in the error; "" for success
	}{
		{"https to http redirect on the same host", fakeHost(reg), func() { reg.Redirect(versions, plain+versions) },
			"refused the redirect from " + reg.URL + versions + " to " + plain + versions},
		{"providers.v1 named as http", fakeHost(reg), func() { reg.SetServiceURL(plain + "/v1/providers/") },
			"its providers.v1 URL " + plain + "/v1/providers/ is not https"},
		{"discovery redirected to http", fakeHost(reg), func() { reg.Redirect(fakeregistry.DiscoveryPath, plain+fakeregistry.DiscoveryPath) },
			"refused the redirect from " + reg.URL + fakeregistry.DiscoveryPath + " to " + plain + fakeregistry.DiscoveryPath},
		{"redirect to a subdomain", origin, func() { reg.Redirect(versions, "https://"+evil+fakeregistry.VersionsPath("hashicorp", "bar")) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg.Reset()
			tt.inject()
			before := len(reg.RequestLog())
			c := loopbackClient(t, ca, tt.host)
			_, err := c.AvailableVersions(ctx(t), provider(tt.host, "hashicorp", "foo"))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("AvailableVersions: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("AvailableVersions: error %v, want one containing %q", err, tt.want)
			}
			authorized, lured := 0, false
			for _, r := range reg.RequestLog()[before:] {
				lured = lured || r.Scheme != "https" || r.Host != string(tt.host)
				wrongPlace := r.Scheme != "https" || r.Host != string(tt.host)
				if r.Authorization != "" && wrongPlace {
					t.Errorf("the token went to %s://%s%s", r.Scheme, r.Host, r.Path)
				}
				if r.Authorization == "Bearer "+token {
					authorized++
				}
			}
			if tt.want == "" && !lured {
				t.Errorf("the redirect was not followed: %+v", reg.RequestLog()[before:])
			}
			if authorized == 0 {
				t.Errorf("the token was never sent, even to %s: %+v", tt.host, reg.RequestLog()[before:])
			}
		})
	}
}

package registry_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/registry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/mirror"
)

// clients returns the API and discovery clients tfmirror would build for a
// CA file: httpx transports trusting only ca.
func clients(t *testing.T, ca *testca.CA) (api, disco *http.Client) {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	tr, err := httpx.NewTransport(httpx.Environment{CAFile: caFile}, httpx.DefaultPolicy())
	if err != nil {
		t.Fatalf("NewTransport: %v", err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return httpx.NewClient(tr, "tfmirror-test", httpx.MaxRedirects, 10*time.Second),
		httpx.NewClient(tr, "tfmirror-test", 3, 10*time.Second)
}

// newClient returns a registry client trusting ca, which retries as
// tfmirror does but without waiting long.
func newClient(t *testing.T, ca *testca.CA, services map[addrs.Hostname]map[string]string, tokens map[addrs.Hostname]string) *registry.Client {
	t.Helper()
	api, disco := clients(t, ca)
	return registry.New(registry.Config{Fetcher: httpx.NewFetcher(api, fastPolicy()), Discovery: disco, Services: services, Tokens: tokens})
}

// fastPolicy is httpx.DefaultPolicy with millisecond backoffs.
func fastPolicy() httpx.Policy {
	p := httpx.DefaultPolicy()
	p.MinBackoff, p.MaxBackoff = time.Millisecond, time.Millisecond
	return p
}

// request is what a test server saw of one request.
type request struct {
	Method, Path, Authorization, UserAgent, Accept string
}

// server is an HTTPS test server on 127.0.0.1 that records its requests.
type server struct {
	*httptest.Server
	Host addrs.Hostname // "127.0.0.1:PORT", usable as a provider hostname

	mu   sync.Mutex
	reqs []request
}

func newServer(t *testing.T, ca *testca.CA, h http.Handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, request{
			Method:        r.Method,
			Path:          r.URL.Path,
			Authorization: r.Header.Get("Authorization"),
			UserAgent:     r.Header.Get("User-Agent"),
			Accept:        r.Header.Get("Accept"),
		})
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	s.TLS = ca.TLSConfig(t, "127.0.0.1")
	s.StartTLS()
	t.Cleanup(s.Close)
	s.Host = addrs.Hostname(strings.TrimPrefix(s.URL, "https://"))
	return s
}

func (s *server) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

func (s *server) paths() []string {
	var out []string
	for _, r := range s.requests() {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// serveJSON answers with body as application/json.
func serveJSON(body string) http.HandlerFunc {
	return serveAs("application/json", body)
}

func serveAs(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write([]byte(body))
	}
}

func provider(host addrs.Hostname, namespace, typ string) addrs.Provider {
	return addrs.Provider{Hostname: host, Namespace: namespace, Type: typ}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var linuxAMD64 = addrs.Platform{OS: "linux", Arch: "amd64"}

func ctx(t *testing.T) context.Context {
	return t.Context()
}

func fetch(t *testing.T, loc mirror.Location) ([]byte, error) {
	t.Helper()
	var buf bufferSink
	err := loc.Fetch(ctx(t), &buf)
	return buf.Bytes(), err
}

// bufferSink is a mirror.Sink in memory.
type bufferSink struct{ bytes.Buffer }

func (b *bufferSink) Reset() error {
	b.Buffer.Reset()
	return nil
}

func wantErrContains(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

package httpx_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// tlsServer starts an HTTPS server on 127.0.0.1 with a certificate from ca.
func tlsServer(t *testing.T, ca *testca.CA, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are expected
	srv.TLS = ca.TLSConfig(t, "127.0.0.1")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// trusting returns a transport that trusts only ca, read from a PEM file.
func trusting(t *testing.T, ca *testca.CA) *http.Transport {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	tr, err := httpx.NewTransport(httpx.Environment{CAFile: caFile}, httpx.DefaultPolicy())
	if err != nil {
		t.Fatalf("NewTransport(%s): %v", caFile, err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewTransportWithoutCAFile(t *testing.T) {
	tr, err := httpx.NewTransport(httpx.Environment{}, httpx.DefaultPolicy())
	if err != nil {
		t.Fatalf("NewTransport: %v", err)
	}
	if tr.Proxy == nil {
		t.Error("Proxy is nil, want proxy settings from the environment")
	}
	if tr.TLSClientConfig != nil && tr.TLSClientConfig.RootCAs != nil {
		t.Error("RootCAs set without a CA file, want the system store")
	}
	if tr == http.DefaultTransport {
		t.Error("NewTransport returned the shared default transport")
	}
}

func TestNewTransportCAFile(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }))

	c := httpx.NewClient(trusting(t, ca), "test", 1, 10*time.Second)
	if _, err := get(t, c, srv.URL, nil); err != nil {
		t.Fatalf("Get with the CA trusted: %v", err)
	}

	// The CA file replaces the trusted roots: another CA's server fails.
	other := tlsServer(t, testca.New(t), http.NotFoundHandler())
	_, err := get(t, c, other.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Get from a server of an untrusted CA: %v, want a certificate error", err)
	}
}

func TestNewTransportBadCAFile(t *testing.T) {
	ca := testca.New(t)
	_, _, keyFile := ca.WriteFiles(t, t.TempDir())
	tests := []struct {
		name     string
		path     string
		want     string
		notExist bool
	}{
		{"missing file", filepath.Join(t.TempDir(), "nope.pem"), "read CA certificates", true},
		{"directory", t.TempDir(), "read CA certificates", false},
		{"not PEM", writeFile(t, "ca.txt", []byte("not a certificate\n")), "holds no PEM certificate", false},
		{"empty", writeFile(t, "empty.pem", nil), "holds no PEM certificate", false},
		{"private key only", keyFile, "holds no PEM certificate", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := httpx.NewTransport(httpx.Environment{CAFile: tt.path}, httpx.DefaultPolicy())
			if err == nil {
				t.Fatalf("NewTransport(%s) = %v, want an error", tt.path, tr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.notExist {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = %v, want %v", err, got, tt.notExist)
			}
		})
	}
}

// redirector redirects /hop/N to /hop/N-1 and answers /hop/0.
func redirector() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		if n == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
}

func TestNewClientRedirectCap(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, redirector())
	c := httpx.NewClient(trusting(t, ca), "test", 2, 10*time.Second)

	body, err := get(t, c, srv.URL+"/hop/2", nil)
	if err != nil {
		t.Fatalf("Get with 2 redirects and a cap of 2: %v", err)
	}
	if string(body) != "arrived" {
		t.Errorf("body = %q, want %q", body, "arrived")
	}

	_, err = get(t, c, srv.URL+"/hop/3", nil)
	if err == nil {
		t.Fatal("Get with 3 redirects and a cap of 2 succeeded")
	}
	if want := "request " + srv.URL + "/hop/3: stopped after 2 redirects"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestNewClientUserAgentAndTimeout(t *testing.T) {
	ca := testca.New(t)
	got := make(chan string, 2)
	srv := tlsServer(t, ca, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("User-Agent")
	}))
	c := httpx.NewClient(trusting(t, ca), "tfmirror/1.2.3", httpx.MaxRedirects, 5*time.Second)
	if c.Timeout != 5*time.Second {
		t.Errorf("Timeout = %v, want 5s", c.Timeout)
	}

	if _, err := get(t, c, srv.URL, nil); err != nil {
		t.Fatal(err)
	}
	if ua := <-got; ua != "tfmirror/1.2.3" {
		t.Errorf("User-Agent = %q, want tfmirror/1.2.3", ua)
	}

	// A User-Agent the caller sets is kept.
	if _, err := get(t, c, srv.URL, http.Header{"User-Agent": {"custom"}}); err != nil {
		t.Fatal(err)
	}
	if ua := <-got; ua != "custom" {
		t.Errorf("User-Agent = %q, want custom", ua)
	}
}

func TestMediaType(t *testing.T) {
	tests := []struct{ header, want string }{
		{"application/json", "application/json"},
		{"application/json; charset=utf-8", "application/json"},
		{"Text/HTML; charset=UTF-8", "text/html"},
		{"", ""},
		{"application/json; =broken", ""},
		{";;", ""},
	}
	for _, tt := range tests {
		resp := &http.Response{Header: http.Header{}}
		if tt.header != "" {
			resp.Header.Set("Content-Type", tt.header)
		}
		if got := httpx.MediaType(resp); got != tt.want {
			t.Errorf("MediaType(%q) = %q, want %q", tt.header, got, tt.want)
		}
	}
}

func TestStatusErrorMessage(t *testing.T) {
	err := &httpx.StatusError{URL: "https://example.com/x", StatusCode: 502, Status: "502 Bad Gateway"}
	if got, want := err.Error(), "https://example.com/x returned 502 Bad Gateway"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// get reads u with c the way tfmirror does, through a Fetcher, without
// retries.
func get(t *testing.T, c *http.Client, u string, header http.Header) ([]byte, error) {
	t.Helper()
	data, _, _, err := httpx.NewFetcher(c, httpx.Policy{}).Document(t.Context(), mustURL(t, u), header, 1<<20)
	return data, err
}

package httpx_test

import (
	"bytes"
	"context"
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
	"testing/iotest"
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
	resp, err := httpx.Get(t.Context(), c, mustURL(t, srv.URL), nil)
	if err != nil {
		t.Fatalf("Get with the CA trusted: %v", err)
	}
	resp.Body.Close()

	// The CA file replaces the trusted roots: another CA's server fails.
	other := tlsServer(t, testca.New(t), http.NotFoundHandler())
	_, err = httpx.Get(t.Context(), c, mustURL(t, other.URL), nil)
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

	resp, err := httpx.Get(t.Context(), c, mustURL(t, srv.URL+"/hop/2"), nil)
	if err != nil {
		t.Fatalf("Get with 2 redirects and a cap of 2: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "arrived" {
		t.Errorf("body = %q, want %q", body, "arrived")
	}

	_, err = httpx.Get(t.Context(), c, mustURL(t, srv.URL+"/hop/3"), nil)
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

	resp, err := httpx.Get(t.Context(), c, mustURL(t, srv.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ua := <-got; ua != "tfmirror/1.2.3" {
		t.Errorf("User-Agent = %q, want tfmirror/1.2.3", ua)
	}

	// A User-Agent the caller sets is kept.
	resp, err = httpx.Get(t.Context(), c, mustURL(t, srv.URL), http.Header{"User-Agent": {"custom"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ua := <-got; ua != "custom" {
		t.Errorf("User-Agent = %q, want custom", ua)
	}
}

func TestGetSendsHeaders(t *testing.T) {
	ca := testca.New(t)
	var seen http.Header
	srv := tlsServer(t, ca, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
	}))
	c := httpx.NewClient(trusting(t, ca), "test", 1, 10*time.Second)
	resp, err := httpx.Get(t.Context(), c, mustURL(t, srv.URL), http.Header{
		"Accept":        {"application/json"},
		"Authorization": {"Bearer tok"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if seen.Get("Accept") != "application/json" || seen.Get("Authorization") != "Bearer tok" {
		t.Errorf("server saw headers %v", seen)
	}
}

func TestGetStatusErrorIsRedacted(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "secret body", http.StatusForbidden)
	}))
	c := httpx.NewClient(trusting(t, ca), "test", 1, 10*time.Second)
	u := mustURL(t, srv.URL+"/path?q=1")
	u.User = url.UserPassword("alice", "hunter2")

	resp, err := httpx.Get(t.Context(), c, u, nil)
	if err == nil {
		resp.Body.Close()
		t.Fatal("Get of a 403 succeeded")
	}
	var se *httpx.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error is %T, want *httpx.StatusError", err)
	}
	if se.StatusCode != http.StatusForbidden || se.Status != "403 Forbidden" {
		t.Errorf("StatusError = %+v", se)
	}
	redacted := "https://alice:xxxxx@" + strings.TrimPrefix(srv.URL, "https://") + "/path?q=1"
	if se.URL != redacted {
		t.Errorf("StatusError.URL = %q, want %q", se.URL, redacted)
	}
	if want := redacted + " returned 403 Forbidden"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "secret body") {
		t.Errorf("error leaks the password or body: %q", err)
	}
}

func TestGetTransportErrorIsRedacted(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.NotFoundHandler())
	addr := strings.TrimPrefix(srv.URL, "https://")
	srv.Close() // nothing listens there any more
	c := httpx.NewClient(trusting(t, ca), "test", 1, 10*time.Second)
	u := mustURL(t, "https://alice:hunter2@"+addr+"/x")

	_, err := httpx.Get(t.Context(), c, u, nil)
	if err == nil {
		t.Fatal("Get from a closed server succeeded")
	}
	if !strings.HasPrefix(err.Error(), "request https://alice:xxxxx@"+addr+"/x: ") {
		t.Errorf("error = %q, want it to start with the redacted URL", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the password: %q", err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		t.Errorf("error still wraps *url.Error, which holds the unredacted URL: %q", ue.URL)
	}
}

func TestGetInvalidURLIsRedacted(t *testing.T) {
	// A URL that does not survive String and Parse fails before any
	// request; the parse error quotes the URL, password and all.
	u := &url.URL{Scheme: "https", Host: "exa mple.com", User: url.UserPassword("alice", "hunter2"), Path: "/x"}
	_, err := httpx.Get(t.Context(), http.DefaultClient, u, nil)
	if err == nil {
		t.Fatal("Get of an invalid URL succeeded")
	}
	if !strings.HasPrefix(err.Error(), "request https://alice:xxxxx@") {
		t.Errorf("error = %q, want it to start with the redacted URL", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error leaks the password: %q", err)
	}
}

func TestGetCanceledContext(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.NotFoundHandler())
	c := httpx.NewClient(trusting(t, ca), "test", 1, 10*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := httpx.Get(ctx, c, mustURL(t, srv.URL), nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a canceled context: %v, want context.Canceled", err)
	}
}

// closeTracker records whether the body was closed.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error {
	c.closed = true
	return nil
}

// response builds a response for u with body and the announced length.
func response(t *testing.T, u string, body io.Reader, contentLength int64) (*http.Response, *closeTracker) {
	t.Helper()
	tracker := &closeTracker{Reader: body}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Response{StatusCode: http.StatusOK, Body: tracker, ContentLength: contentLength, Request: req, Header: http.Header{}}, tracker
}

const secretURL = "https://bob:hunter2@example.com/doc.json"

func TestReadLimited(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		contentLength int64
		limit         int64
		want          string // error substring; "" for success
	}{
		{"under the limit", "12345", 5, 10, ""},
		{"at the limit", "1234567890", 10, 10, ""},
		{"at the limit, length unknown", "1234567890", -1, 10, ""},
		{"empty", "", 0, 10, ""},
		{"announced over the limit", "", 11, 10, "https://bob:xxxxx@example.com/doc.json: response of 11 bytes exceeds the limit of 10"},
		{"streamed over the limit", "12345678901", -1, 10, "https://bob:xxxxx@example.com/doc.json: response exceeds the limit of 10 bytes"},
		{"longer than announced", "12345678901", 5, 10, "exceeds the limit of 10 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, tracker := response(t, secretURL, strings.NewReader(tt.body), tt.contentLength)
			data, err := httpx.ReadLimited(resp, tt.limit)
			if !tracker.closed {
				t.Error("body not closed")
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ReadLimited: %v", err)
				}
				if string(data) != tt.body {
					t.Errorf("ReadLimited = %q, want %q", data, tt.body)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadLimited error = %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the password: %q", err)
			}
		})
	}
}

func TestReadLimitedReadError(t *testing.T) {
	boom := errors.New("connection reset")
	resp, _ := response(t, secretURL, io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), -1)
	_, err := httpx.ReadLimited(resp, 100)
	if !errors.Is(err, boom) {
		t.Fatalf("ReadLimited error = %v, want it to wrap the read error", err)
	}
	if want := "read https://bob:xxxxx@example.com/doc.json: connection reset"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestCopy(t *testing.T) {
	tests := []struct {
		name          string
		body          string
		contentLength int64
		want          string
	}{
		{"exact", "0123456789", 10, ""},
		{"length unknown", "0123456789", -1, ""},
		{"empty", "", 0, ""},
		{"short", "01234", 10, "read https://bob:xxxxx@example.com/doc.json: got 5 bytes, expected 10"},
		{"long", "0123456789ab", 10, "got 12 bytes, expected 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, tracker := response(t, secretURL, strings.NewReader(tt.body), tt.contentLength)
			var buf bytes.Buffer
			err := httpx.Copy(resp, &buf)
			if !tracker.closed {
				t.Error("body not closed")
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Copy: %v", err)
				}
				if buf.String() != tt.body {
					t.Errorf("copied %q, want %q", buf.String(), tt.body)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Copy error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestCopyErrors(t *testing.T) {
	boom := errors.New("connection reset")
	resp, _ := response(t, secretURL, io.MultiReader(strings.NewReader("abc"), iotest.ErrReader(boom)), 10)
	err := httpx.Copy(resp, io.Discard)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "read https://bob:xxxxx@example.com/doc.json: ") {
		t.Errorf("Copy with a failing body: %v", err)
	}

	resp, _ = response(t, secretURL, strings.NewReader("abc"), 3)
	err = httpx.Copy(resp, failingWriter{})
	if err == nil {
		t.Error("Copy to a failing writer succeeded")
	}

	// Without a request the message still says what failed.
	resp = &http.Response{Body: io.NopCloser(strings.NewReader("ab")), ContentLength: 3}
	if err := httpx.Copy(resp, io.Discard); err == nil || err.Error() != "read response: got 2 bytes, expected 3" {
		t.Errorf("Copy without a request: %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestCopyDetectsShortBodyFromServer(t *testing.T) {
	// A server that announces more than it sends and drops the connection.
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(http.StatusOK)
		w.Write(bytes.Repeat([]byte("x"), 40))
		rc := http.NewResponseController(w)
		if err := rc.Flush(); err != nil {
			return
		}
		if conn, _, err := rc.Hijack(); err == nil {
			conn.Close()
		}
	}))
	c := httpx.NewClient(trusting(t, ca), "test", 1, 10*time.Second)
	resp, err := httpx.Get(t.Context(), c, mustURL(t, srv.URL+"/short"), nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	var buf bytes.Buffer
	err = httpx.Copy(resp, &buf)
	if err == nil {
		t.Fatalf("Copy of a short body succeeded with %d bytes", buf.Len())
	}
	if !strings.HasPrefix(err.Error(), "read "+srv.URL+"/short: ") {
		t.Errorf("error = %q, want it to name the URL", err)
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

package httpx_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// sleeper records the waits a Fetcher asks for instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// memSink is a Sink in memory that counts its resets.
type memSink struct {
	bytes.Buffer
	resets int
}

func (s *memSink) Reset() error {
	s.resets++
	s.Buffer.Reset()
	return nil
}

// testPolicy is the default policy with short timeouts for tests.
func testPolicy() httpx.Policy {
	p := httpx.DefaultPolicy()
	p.ConnectTimeout, p.HeaderTimeout, p.StallTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	return p
}

// fetcherFor returns a fetcher trusting ca, with a transport made by
// NewTransport for p, whose waits are recorded rather than slept.
func fetcherFor(t *testing.T, ca *testca.CA, p httpx.Policy) (*httpx.Fetcher, *sleeper) {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	tr, err := httpx.NewTransport(httpx.Environment{CAFile: caFile}, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	f := httpx.NewFetcher(httpx.NewClient(tr, "test", httpx.MaxRedirects, 0), p)
	s := &sleeper{}
	httpx.SetSleep(f, s.sleep)
	return f, s
}

// counted wraps h and counts the requests it serves, numbering them from 1.
func counted(h func(n int32, w http.ResponseWriter, r *http.Request)) (http.Handler, *atomic.Int32) {
	var n atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(n.Add(1), w, r)
	}), &n
}

var payload = bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB

func TestFetchRetriesServerErrors(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(n int32, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write(payload)
	})
	srv := tlsServer(t, ca, h)
	f, s := fetcherFor(t, ca, testPolicy())
	var sink memSink
	if err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/a.zip"), nil, &sink); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !bytes.Equal(sink.Bytes(), payload) {
		t.Errorf("sink holds %d bytes, want the %d served once", sink.Len(), len(payload))
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d requests, want 3", got)
	}
	if sink.resets != 2 {
		t.Errorf("sink reset %d times, want 2 (once before each retry)", sink.resets)
	}
	waits := s.recorded()
	if len(waits) != 2 {
		t.Fatalf("waits = %v, want 2", waits)
	}
	// Equal jitter: between half and all of 500ms, then of 1s.
	for i, base := range []time.Duration{500 * time.Millisecond, time.Second} {
		if waits[i] < base/2 || waits[i] > base {
			t.Errorf("wait %d = %v, want between %v and %v", i+1, waits[i], base/2, base)
		}
	}
}

func TestFetchHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		header   func() string
		min, max time.Duration
	}{
		{"429 seconds", http.StatusTooManyRequests, func() string { return "7" }, 7 * time.Second, 7 * time.Second},
		{"503 seconds", http.StatusServiceUnavailable, func() string { return "12" }, 12 * time.Second, 12 * time.Second},
		{"429 date", http.StatusTooManyRequests, func() string { return time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat) }, 28 * time.Second, 30 * time.Second},
		{"429 date in the past", http.StatusTooManyRequests, func() string { return "Mon, 02 Jan 2006 15:04:05 GMT" }, 0, 0},
		{"429 zero", http.StatusTooManyRequests, func() string { return "0" }, 0, 0},
		// Retry-After on other statuses, or unparseable, means the usual backoff.
		{"500 ignores it", http.StatusInternalServerError, func() string { return "7" }, 250 * time.Millisecond, 500 * time.Millisecond},
		{"429 garbage", http.StatusTooManyRequests, func() string { return "soon" }, 250 * time.Millisecond, 500 * time.Millisecond},
		{"429 negative", http.StatusTooManyRequests, func() string { return "-5" }, 250 * time.Millisecond, 500 * time.Millisecond},
	}
	ca := testca.New(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := counted(func(n int32, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", tt.header())
					http.Error(w, "slow down", tt.status)
					return
				}
				w.Write([]byte("ok"))
			})
			srv := tlsServer(t, ca, h)
			f, s := fetcherFor(t, ca, testPolicy())
			var sink memSink
			if err := f.Fetch(t.Context(), mustURL(t, srv.URL), nil, &sink); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			waits := s.recorded()
			if len(waits) != 1 || waits[0] < tt.min || waits[0] > tt.max {
				t.Errorf("waits = %v, want one between %v and %v", waits, tt.min, tt.max)
			}
		})
	}
}

func TestFetchGivesUpOnLongRetryAfter(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		http.Error(w, "come back in an hour", http.StatusTooManyRequests)
	})
	srv := tlsServer(t, ca, h)
	f, s := fetcherFor(t, ca, testPolicy())
	err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/x"), nil, &memSink{})
	if err == nil {
		t.Fatal("Fetch succeeded")
	}
	want := srv.URL + "/x returned 429 Too Many Requests; the server asks to wait 1h0m0s before retrying, longer than the 5m0s tfmirror waits"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if n.Load() != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d requests and waits %v, want 1 request and no wait", n.Load(), s.recorded())
	}
	var se *httpx.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusTooManyRequests {
		t.Errorf("errors.As(*StatusError) = %v, want the 429", se)
	}
}

// resetConn drops the connection under w with a TCP reset, after sending
// the headers of a 200 response of len(payload) bytes and half the body.
func resetConn(t *testing.T, w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/zip\r\nContent-Length: %d\r\n\r\n", len(payload))
	buf.Write(payload[:len(payload)/2])
	buf.Flush()
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn() // no close_notify: just the reset
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	raw.Close()
}

func TestFetchRetriesDroppedConnections(t *testing.T) {
	ca := testca.New(t)
	tests := []struct {
		name    string
		breakIt func(t *testing.T, w http.ResponseWriter)
	}{
		{"reset mid-body", resetConn},
		{"Content-Length larger than the body", func(_ *testing.T, w http.ResponseWriter) {
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)+100))
			w.Write(payload)
		}},
		{"closed without a response", func(t *testing.T, w http.ResponseWriter) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, n := counted(func(n int32, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					tt.breakIt(t, w)
					return
				}
				w.Write(payload)
			})
			srv := tlsServer(t, ca, h)
			f, s := fetcherFor(t, ca, testPolicy())
			var sink memSink
			if err := f.Fetch(t.Context(), mustURL(t, srv.URL), nil, &sink); err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if !bytes.Equal(sink.Bytes(), payload) {
				t.Errorf("sink holds %d bytes, want exactly the %d served", sink.Len(), len(payload))
			}
			if n.Load() != 2 || sink.resets != 1 || len(s.recorded()) != 1 {
				t.Errorf("%d requests, %d resets, waits %v; want 2 requests, 1 reset, 1 wait", n.Load(), sink.resets, s.recorded())
			}
		})
	}
}

func TestFetchShortBodyFinalError(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write(payload[:400])
	})
	srv := tlsServer(t, ca, h)
	p := testPolicy()
	p.Retries = 2
	f, _ := fetcherFor(t, ca, p)
	err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/short.zip"), nil, &memSink{})
	if err == nil {
		t.Fatal("Fetch of a short body succeeded")
	}
	if want := "read " + srv.URL + "/short.zip: unexpected EOF (after 3 attempts)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if n.Load() != 3 {
		t.Errorf("%d requests, want 3", n.Load())
	}
}

func TestFetchRetriesStalledBody(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(n int32, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)))
			w.Write(payload[:1000])
			http.NewResponseController(w).Flush()
			select { // stall until the client gives up
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Write(payload)
	})
	srv := tlsServer(t, ca, h)
	p := testPolicy()
	p.StallTimeout = 100 * time.Millisecond
	f, _ := fetcherFor(t, ca, p)
	var sink memSink
	start := time.Now()
	if err := f.Fetch(t.Context(), mustURL(t, srv.URL), nil, &sink); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Fetch took %v; the stall should have been noticed after 100ms", d)
	}
	if !bytes.Equal(sink.Bytes(), payload) || sink.resets != 1 || n.Load() != 2 {
		t.Errorf("sink %d bytes, %d resets, %d requests; want the payload, 1 reset, 2 requests", sink.Len(), sink.resets, n.Load())
	}
}

func TestFetchStallFinalError(t *testing.T) {
	ca := testca.New(t)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(payload[:10])
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	p := testPolicy()
	p.Retries, p.StallTimeout = 1, 50*time.Millisecond
	f, _ := fetcherFor(t, ca, p)
	err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/slow"), nil, &memSink{})
	if err == nil {
		t.Fatal("Fetch of a stalled body succeeded")
	}
	if want := "read " + srv.URL + "/slow: no data for 50ms (after 2 attempts)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// A stall is not an interruption: the CLI maps context.Canceled to 130.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("stall error %v wraps a context error", err)
	}
}

func TestFetchRetriesHeaderTimeout(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(n int32, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Write([]byte("ok"))
	})
	srv := tlsServer(t, ca, h)
	p := testPolicy()
	p.HeaderTimeout = 100 * time.Millisecond
	f, _ := fetcherFor(t, ca, p)
	var sink memSink
	start := time.Now()
	if err := f.Fetch(t.Context(), mustURL(t, srv.URL), nil, &sink); err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second || sink.String() != "ok" || n.Load() != 2 {
		t.Errorf("took %v, got %q after %d requests; want ok after 2 requests, quickly", d, sink.String(), n.Load())
	}
}

func TestFetchPersistentServerError(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	srv := tlsServer(t, ca, h)
	f, s := fetcherFor(t, ca, testPolicy())
	u := mustURL(t, srv.URL+"/path/a.zip")
	err := f.Fetch(t.Context(), u, nil, &memSink{})
	if err == nil {
		t.Fatal("Fetch succeeded")
	}
	if want := srv.URL + "/path/a.zip returned 503 Service Unavailable (after 5 attempts)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	var se *httpx.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("errors.As(*StatusError) = %+v", se)
	}
	var re *httpx.RequestError
	if !errors.As(err, &re) || re.Attempts != 5 || re.URL != u.String() {
		t.Errorf("errors.As(*RequestError) = %+v", re)
	}
	if n.Load() != 5 {
		t.Errorf("%d requests, want 5 (Retries = 4)", n.Load())
	}
	waits := s.recorded()
	if len(waits) != 4 {
		t.Fatalf("waits = %v, want 4", waits)
	}
	for i, base := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second} {
		if waits[i] < base/2 || waits[i] > base {
			t.Errorf("wait %d = %v, want between %v and %v", i+1, waits[i], base/2, base)
		}
	}
}

func TestFetchRetriesOnlyWhatMayGoAway(t *testing.T) {
	tests := []struct {
		status int
		retry  bool
	}{
		{http.StatusInternalServerError, true},
		{http.StatusBadGateway, true},
		{http.StatusServiceUnavailable, true},
		{http.StatusGatewayTimeout, true},
		{http.StatusInsufficientStorage, true},
		{http.StatusTooManyRequests, true},
		{http.StatusNotImplemented, false},
		{http.StatusNotFound, false},
		{http.StatusUnauthorized, false},
		{http.StatusForbidden, false},
		{http.StatusGone, false},
		{http.StatusBadRequest, false},
		{http.StatusNoContent, false},
	}
	ca := testca.New(t)
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			h, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
			})
			srv := tlsServer(t, ca, h)
			p := testPolicy()
			p.Retries = 2
			f, _ := fetcherFor(t, ca, p)
			_, _, _, err := f.Document(t.Context(), mustURL(t, srv.URL+"/doc"), nil, 100)
			var se *httpx.StatusError
			if !errors.As(err, &se) || se.StatusCode != tt.status {
				t.Fatalf("error %v, want a StatusError %d", err, tt.status)
			}
			want := int32(1)
			if tt.retry {
				want = 3
			}
			if n.Load() != want {
				t.Errorf("%d requests, want %d", n.Load(), want)
			}
			if !tt.retry && strings.Contains(err.Error(), "attempts") {
				t.Errorf("error %q counts attempts for a single request", err)
			}
		})
	}
}

func TestFetchRetriesConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	p := testPolicy()
	p.Retries = 2
	f, s := fetcherFor(t, testca.New(t), p)
	err = f.Fetch(t.Context(), mustURL(t, "https://"+addr+"/a.zip"), nil, &memSink{})
	if err == nil {
		t.Fatal("Fetch from a closed port succeeded")
	}
	if !strings.HasPrefix(err.Error(), "request https://"+addr+"/a.zip: ") || !strings.HasSuffix(err.Error(), "(after 3 attempts)") {
		t.Errorf("error = %q", err)
	}
	if len(s.recorded()) != 2 {
		t.Errorf("waits = %v, want 2", s.recorded())
	}
}

func TestFetchDoesNotRetryCertificateErrors(t *testing.T) {
	srv := tlsServer(t, testca.New(t), http.NotFoundHandler())
	f, s := fetcherFor(t, testca.New(t), testPolicy()) // trusts another CA
	err := f.Fetch(t.Context(), mustURL(t, srv.URL), nil, &memSink{})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("error = %v, want a certificate error", err)
	}
	if len(s.recorded()) != 0 {
		t.Errorf("waits = %v: a certificate error was retried", s.recorded())
	}
}

func TestFetchRedirects(t *testing.T) {
	ca := testca.New(t)
	tests := []struct {
		name     string
		redirect func(r *http.Request) string
		plain    bool // an http.Client without NewClient's CheckRedirect
		want     string
		requests int32
	}{
		{"loop", func(*http.Request) string { return "/loop" }, false, "stopped at a redirect loop: {srv}/loop redirects back to {srv}/loop", 1},
		{"two-step loop", func(r *http.Request) string {
			if r.URL.Path == "/loop" {
				return "/other"
			}
			return "/loop"
		}, false, "stopped at a redirect loop: {srv}/other redirects back to {srv}/loop", 2},
		{"endless", func(r *http.Request) string { return r.URL.Path + "x" }, false, "stopped after 10 redirects", 11},
		{"loop, plain client", func(*http.Request) string { return "/loop" }, true, "stopped after 10 redirects", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, tt.redirect(r), http.StatusFound)
			})
			srv := tlsServer(t, ca, h)
			f, s := fetcherFor(t, ca, testPolicy())
			if tt.plain {
				f.Client = &http.Client{Transport: f.Client.Transport}
			}
			_, _, _, err := f.Document(t.Context(), mustURL(t, srv.URL+"/loop"), nil, 100)
			if err == nil {
				t.Fatal("Document succeeded")
			}
			want := "request " + srv.URL + "/loop: " + strings.ReplaceAll(tt.want, "{srv}", srv.URL)
			if err.Error() != want {
				t.Errorf("error = %q\nwant    %q", err, want)
			}
			if n.Load() != tt.requests || len(s.recorded()) != 0 {
				t.Errorf("%d requests, waits %v; want %d requests and no retry", n.Load(), s.recorded(), tt.requests)
			}
		})
	}
}

func TestDocument(t *testing.T) {
	ca := testca.New(t)
	var accept atomic.Value
	mux := http.NewServeMux()
	mux.Handle("GET /old", http.RedirectHandler("/new/doc.json", http.StatusMovedPermanently))
	mux.HandleFunc("GET /new/doc.json", func(w http.ResponseWriter, r *http.Request) {
		accept.Store(r.Header.Get("Accept"))
		w.Header().Set("Content-Type", "Application/JSON; charset=utf-8")
		w.Write([]byte(`{"ok":true}`))
	})
	srv := tlsServer(t, ca, mux)
	f, _ := fetcherFor(t, ca, testPolicy())
	data, final, mt, err := f.Document(t.Context(), mustURL(t, srv.URL+"/old"), http.Header{"Accept": {"application/json"}}, 11)
	if err != nil {
		t.Fatalf("Document: %v", err)
	}
	if string(data) != `{"ok":true}` || final.String() != srv.URL+"/new/doc.json" || mt != "application/json" {
		t.Errorf("Document = %q, %s, %q", data, final, mt)
	}
	if accept.Load() != "application/json" {
		t.Errorf("Accept = %v", accept.Load())
	}
}

func TestDocumentSizeLimit(t *testing.T) {
	ca := testca.New(t)
	const limit = 1 << 20
	var written atomic.Int64
	done := make(chan struct{}, 1)
	endless, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		w.Header().Set("Content-Type", "application/json")
		chunk := bytes.Repeat([]byte(" "), 32<<10)
		w.Write([]byte("["))
		for r.Context().Err() == nil {
			k, err := w.Write(chunk)
			written.Add(int64(k))
			if err != nil {
				return
			}
		}
	})
	srv := tlsServer(t, ca, endless)
	f, s := fetcherFor(t, ca, testPolicy())
	start := time.Now()
	data, _, _, err := f.Document(t.Context(), mustURL(t, srv.URL+"/endless.json"), nil, limit)
	if err == nil {
		t.Fatalf("Document of an endless body returned %d bytes", len(data))
	}
	if want := srv.URL + "/endless.json: response exceeds the limit of 1048576 bytes"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Document took %v", d)
	}
	if n.Load() != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d requests, waits %v: a body over the limit was retried", n.Load(), s.recorded())
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server is still writing: the client did not hang up")
	}
	// The client stopped reading at the limit; what the server wrote
	// beyond it is what socket buffers hold, not an endless stream.
	if w := written.Load(); w > 64<<20 {
		t.Errorf("server wrote %d bytes before the client hung up", w)
	}

	// A Content-Length over the limit fails before reading, once.
	announced, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(limit+1))
		w.WriteHeader(http.StatusOK)
	})
	srv = tlsServer(t, ca, announced)
	_, _, _, err = f.Document(t.Context(), mustURL(t, srv.URL+"/big.json"), nil, limit)
	if want := srv.URL + "/big.json: response of 1048577 bytes exceeds the limit of 1048576"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
	if n.Load() != 1 {
		t.Errorf("%d requests, want 1", n.Load())
	}
}

func TestFetchNeverShowsCredentials(t *testing.T) {
	ca := testca.New(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/busy", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "hunter2", http.StatusServiceUnavailable) })
	mux.HandleFunc("/short", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("x"))
	})
	mux.Handle("/loop", http.RedirectHandler("/loop", http.StatusFound))
	srv := tlsServer(t, ca, mux)
	host := strings.TrimPrefix(srv.URL, "https://")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	p := testPolicy()
	p.Retries = 1
	f, _ := fetcherFor(t, ca, p)
	for _, user := range []string{"alice:hunter2@", "hunter2@"} {
		for _, target := range []string{host + "/busy", host + "/short", host + "/loop", closed + "/x"} {
			u := mustURL(t, "https://"+user+target)
			for name, call := range map[string]func() error{
				"Fetch": func() error { return f.Fetch(t.Context(), u, nil, &memSink{}) },
				"Document": func() error {
					_, _, _, err := f.Document(t.Context(), u, nil, 1000)
					return err
				},
			} {
				err := call()
				if err == nil {
					t.Fatalf("%s %s succeeded", name, u.Redacted())
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("%s error leaks the credentials: %q", name, err)
				}
				if !strings.Contains(err.Error(), "xxxxx@"+target) {
					t.Errorf("%s error %q does not name the redacted URL", name, err)
				}
			}
		}
	}
}

func TestFetchCancelDuringBackoff(t *testing.T) {
	ca := testca.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		go func() {
			time.Sleep(50 * time.Millisecond)
			cancel()
		}()
	})
	srv := tlsServer(t, ca, h)
	p := testPolicy()
	p.MinBackoff, p.MaxBackoff = time.Hour, time.Hour
	f, _ := fetcherFor(t, ca, p)
	httpx.SetSleep(f, nil) // really wait
	start := time.Now()
	err := f.Fetch(ctx, mustURL(t, srv.URL+"/a"), nil, &memSink{})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Fetch returned after %v", d)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	var se *httpx.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("error %v lost the last status", err)
	}
	if want := srv.URL + "/a returned 503 Service Unavailable (stopped: context canceled)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if n.Load() != 1 {
		t.Errorf("%d requests, want 1", n.Load())
	}
}

func TestFetchCanceledContext(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(int32, http.ResponseWriter, *http.Request) {})
	srv := tlsServer(t, ca, h)
	f, s := fetcherFor(t, ca, testPolicy())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := f.Fetch(ctx, mustURL(t, srv.URL), nil, &memSink{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if n.Load() != 0 || len(s.recorded()) != 0 {
		t.Errorf("%d requests, waits %v after cancellation", n.Load(), s.recorded())
	}
}

// failingSink fails writes or resets.
type failingSink struct {
	memSink
	writeErr, resetErr error
}

func (s *failingSink) Write(p []byte) (int, error) {
	if s.writeErr != nil {
		return 0, s.writeErr
	}
	return s.memSink.Write(p)
}

func (s *failingSink) Reset() error {
	if s.resetErr != nil {
		return s.resetErr
	}
	return s.memSink.Reset()
}

func TestFetchSinkFailuresAreFinal(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(n int32, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			http.Error(w, "busy", http.StatusBadGateway)
			return
		}
		w.Write(payload)
	})
	srv := tlsServer(t, ca, h)
	f, s := fetcherFor(t, ca, testPolicy())

	diskFull := errors.New("disk full")
	n.Store(1) // no 502 first
	err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/a"), nil, &failingSink{writeErr: diskFull})
	if !errors.Is(err, diskFull) || err.Error() != "copy "+srv.URL+"/a: disk full" {
		t.Errorf("error = %v, want the sink's, once", err)
	}

	n.Store(0) // a 502 first, then the reset fails
	err = f.Fetch(t.Context(), mustURL(t, srv.URL+"/a"), nil, &failingSink{resetErr: diskFull})
	if !errors.Is(err, diskFull) || !strings.Contains(err.Error(), "502 Bad Gateway; then discarding the partial download failed: disk full") {
		t.Errorf("error = %v", err)
	}
	if len(s.recorded()) != 0 {
		t.Errorf("waits = %v, want none", s.recorded())
	}
}

func TestFetchWithoutRetries(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	})
	srv := tlsServer(t, ca, h)
	p := testPolicy()
	p.Retries = 0
	f, _ := fetcherFor(t, ca, p)
	err := f.Fetch(t.Context(), mustURL(t, srv.URL), nil, &memSink{})
	if err == nil || err.Error() != srv.URL+" returned 500 Internal Server Error" || n.Load() != 1 {
		t.Errorf("error %v after %d requests, want one 500", err, n.Load())
	}
}

func TestFetchRefusesOtherSchemes(t *testing.T) {
	f := httpx.NewFetcher(nil, testPolicy())
	err := f.Fetch(t.Context(), mustURL(t, "ftp://bob:hunter2@example.com/x"), nil, &memSink{})
	if err == nil || err.Error() != `request ftp://bob:xxxxx@example.com/x: unsupported URL scheme "ftp"` {
		t.Errorf("error = %v", err)
	}
}

func TestNewTransportTimeouts(t *testing.T) {
	p := httpx.Policy{ConnectTimeout: 3 * time.Second, HeaderTimeout: 7 * time.Second}
	tr, err := httpx.NewTransport(httpx.Environment{}, p)
	if err != nil {
		t.Fatal(err)
	}
	if tr.TLSHandshakeTimeout != 3*time.Second || tr.ResponseHeaderTimeout != 7*time.Second || tr.DialContext == nil {
		t.Errorf("transport timeouts: TLS handshake %v, headers %v", tr.TLSHandshakeTimeout, tr.ResponseHeaderTimeout)
	}
}

func TestBackoff(t *testing.T) {
	p := httpx.DefaultPolicy()
	for retry := 1; retry <= 12; retry++ {
		base := min(p.MinBackoff<<(retry-1), p.MaxBackoff)
		for range 200 {
			if d := p.Backoff(retry); d < base/2 || d > base {
				t.Fatalf("backoff before retry %d = %v, want between %v and %v", retry, d, base/2, base)
			}
		}
	}
	if d := (httpx.Policy{}).Backoff(3); d != 0 {
		t.Errorf("zero policy backoff = %v, want 0", d)
	}
	huge := httpx.Policy{MinBackoff: time.Second, MaxBackoff: 1<<63 - 1}
	if d := huge.Backoff(200); d <= 0 {
		t.Errorf("backoff overflowed: %v", d)
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := httpx.DefaultPolicy().Validate(); err != nil {
		t.Errorf("DefaultPolicy: %v", err)
	}
	if err := (httpx.Policy{}).Validate(); err != nil {
		t.Errorf("zero Policy: %v", err)
	}
	tests := []struct {
		change func(*httpx.Policy)
		want   string
	}{
		{func(p *httpx.Policy) { p.Retries = -1 }, "retries must be 0 or more, not -1"},
		{func(p *httpx.Policy) { p.StallTimeout = -time.Second }, "stall timeout must be 0 (no limit) or more, not -1s"},
		{func(p *httpx.Policy) { p.ConnectTimeout = -time.Second }, "connect timeout must be 0"},
		{func(p *httpx.Policy) { p.HeaderTimeout = -time.Second }, "header timeout must be 0"},
		{func(p *httpx.Policy) { p.MinBackoff = time.Minute }, "minimum backoff 1m0s is more than the maximum 30s"},
	}
	for _, tt := range tests {
		p := httpx.DefaultPolicy()
		tt.change(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate = %v, want %q", err, tt.want)
		}
	}
}

func TestRequestErrorMessage(t *testing.T) {
	inner := &httpx.StatusError{URL: "https://example.com/x", StatusCode: 502, Status: "502 Bad Gateway"}
	tests := []struct {
		err  *httpx.RequestError
		want string
	}{
		{&httpx.RequestError{Attempts: 1, Err: inner}, "https://example.com/x returned 502 Bad Gateway"},
		{&httpx.RequestError{Attempts: 3, Err: inner}, "https://example.com/x returned 502 Bad Gateway (after 3 attempts)"},
		{&httpx.RequestError{Attempts: 3, Err: inner, Stopped: context.Canceled}, "https://example.com/x returned 502 Bad Gateway (after 3 attempts; stopped: context canceled)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

var _ httpx.Sink = (*memSink)(nil)

func TestFetchCancelMidBody(t *testing.T) {
	ca := testca.New(t)
	sent := make(chan struct{})
	h, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.Write(payload[:100])
		http.NewResponseController(w).Flush()
		close(sent)
		<-r.Context().Done()
	})
	srv := tlsServer(t, ca, h)
	f, s := fetcherFor(t, ca, testPolicy())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sink := &memSink{}
	go func() {
		<-sent
		time.Sleep(50 * time.Millisecond) // the body's first bytes on their way
		cancel()
	}()
	start := time.Now()
	err := f.Fetch(ctx, mustURL(t, srv.URL+"/a.zip"), nil, sink)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Fetch returned after %v", d)
	}
	if n.Load() != 1 || len(s.recorded()) != 0 {
		t.Errorf("%d requests, waits %v; want 1 request, no retry", n.Load(), s.recorded())
	}
}

// writeCounter is a memSink that counts writes.
type writeCounter struct {
	memSink
	writes int
}

func (s *writeCounter) Write(p []byte) (int, error) {
	s.writes++
	return s.memSink.Write(p)
}

// A download reaches its sink in large writes, not one per TLS record:
// each write costs the build a system call and a hand-off to its hashing.
func TestFetchWritesInChunks(t *testing.T) {
	ca := testca.New(t)
	body := bytes.Repeat(payload, 16) // 1 MiB
	h, _ := counted(func(_ int32, w http.ResponseWriter, _ *http.Request) {
		for rest := body; len(rest) > 0; rest = rest[min(len(rest), 4096):] {
			w.Write(rest[:min(len(rest), 4096)])
			http.NewResponseController(w).Flush()
		}
	})
	srv := tlsServer(t, ca, h)
	f, _ := fetcherFor(t, ca, testPolicy())
	sink := &writeCounter{}
	if err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/a.zip"), nil, sink); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sink.Bytes(), body) {
		t.Fatalf("the sink holds %d bytes, want the %d sent", sink.Len(), len(body))
	}
	if sink.writes > 4 {
		t.Errorf("%d writes for a 1 MiB body, want at most 4", sink.writes)
	}
}

// An HTML page answered for a file (a login page, a proxy's or a captive
// portal's) is a failure of the request, said as such, not a file that
// then fails its checksum; a file that starts as files do is taken
// whatever its Content-Type says.
func TestFetchRefusesAnHTMLPage(t *testing.T) {
	ca := testca.New(t)
	h, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if strings.HasSuffix(r.URL.Path, ".zip") {
			w.Write(payload)
			return
		}
		w.Write([]byte("\n<!DOCTYPE html><html><body>Please sign in</body></html>\n"))
	})
	srv := tlsServer(t, ca, h)
	f, _ := fetcherFor(t, ca, testPolicy())
	err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/SHA256SUMS"), nil, &memSink{})
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/SHA256SUMS returned an HTML page instead of the file") || n.Load() != 1 {
		t.Errorf("Fetch of an HTML page: %v after %d requests, want one refusal saying so", err, n.Load())
	}
	var sink memSink
	if err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/a.zip"), nil, &sink); err != nil || !bytes.Equal(sink.Bytes(), payload) {
		t.Errorf("Fetch of a file served as text/html: %v, %d bytes", err, len(sink.Bytes()))
	}
}

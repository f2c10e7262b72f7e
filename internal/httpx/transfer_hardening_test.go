package httpx_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

func TestRedactHidesSecrets(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://s3.example/b/p.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=deadbeef&X-Amz-Security-Token=tok",
			"https://s3.example/b/p.zip?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=xxxxx&X-Amz-Signature=xxxxx&X-Amz-Security-Token=xxxxx"},
		{"https://cdn.example/p.zip?Expires=1&Signature=abc&Key-Pair-Id=K", "https://cdn.example/p.zip?Expires=1&Signature=xxxxx&Key-Pair-Id=K"},
		{"https://blob.example/p.zip?sv=2024&SIG=abc&se=2026", "https://blob.example/p.zip?sv=2024&SIG=xxxxx&se=2026"},
		{"https://x.example/p.zip?token=t1&Access_Token=t2&api_key=k&X-Goog-Signature=s", "https://x.example/p.zip?token=xxxxx&Access_Token=xxxxx&api_key=xxxxx&X-Goog-Signature=xxxxx"},
		{"https://bob:hunter2@x.example/p.zip", "https://bob:xxxxx@x.example/p.zip"},
		{"https://ghp_secret@x.example/p.zip", "https://xxxxx@x.example/p.zip"},
		{"https://x.example/p.zip#access_token=t", "https://x.example/p.zip"},
		{"https://x.example/p.zip?version=1.0.0&os=linux", "https://x.example/p.zip?version=1.0.0&os=linux"},
	} {
		if got := httpx.Redact(mustURL(t, tt.in)); got != tt.want {
			t.Errorf("Redact(%s)\n = %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// authServer is a server that records the Authorization header of every
// request, by URL.
type authServer struct {
	mu   sync.Mutex
	seen map[string]string // "scheme://host/path" → Authorization
}

func (a *authServer) record(scheme string, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen[scheme+"://"+r.Host+r.URL.Path] = r.Header.Get("Authorization")
}

func (a *authServer) got(u string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.seen[u]
	return v, ok
}

// TestRedirectsDropCredentials follows redirects from an https origin
// whose certificate also names a subdomain, to the same origin, a
// subdomain, another port and plain http on the same host: only the same
// origin may see the token. Go's own rule keeps it in all four cases.
func TestRedirectsDropCredentials(t *testing.T) {
	ca := testca.New(t)
	a := &authServer{seen: map[string]string{}}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.record("http", r) }))
	t.Cleanup(plain.Close)
	other := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.record("https", r) }))
	origin := httptest.NewUnstartedServer(nil)
	origin.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.record("https", r)
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
		}
	})
	origin.TLS = ca.TLSConfig(t, "registry.test", "evil.registry.test", "127.0.0.1")
	origin.StartTLS()
	t.Cleanup(origin.Close)
	port := origin.Listener.Addr().(*net.TCPAddr).Port
	start := "https://registry.test:" + strconv.Itoa(port)
	plainHost := strings.TrimPrefix(plain.URL, "http://")

	f := loopbackFetcher(t, ca)
	for _, tt := range []struct {
		name, to, lands string
		token           bool
	}{
		{"same origin", start + "/same", start + "/same", true},
		{"subdomain", "https://evil.registry.test:" + strconv.Itoa(port) + "/sub", "https://evil.registry.test:" + strconv.Itoa(port) + "/sub", false},
		{"other port", other.URL + "/port", other.URL + "/port", false},
		{"plain http, same host", "http://registry.test:" + strings.Split(plainHost, ":")[1] + "/plain", "http://registry.test:" + strings.Split(plainHost, ":")[1] + "/plain", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := mustURL(t, start+"/start?to="+url.QueryEscape(tt.to))
			_, _, _, err := f.Document(t.Context(), u, http.Header{"Authorization": {"Bearer sekrit"}}, 1<<10)
			if err != nil {
				t.Fatalf("Document: %v", err)
			}
			got, ok := a.got(tt.lands)
			if !ok {
				t.Fatalf("the redirect did not reach %s", tt.lands)
			}
			if (got != "") != tt.token {
				t.Errorf("%s got Authorization %q; want the token: %v", tt.lands, got, tt.token)
			}
		})
	}

	t.Run("https only", func(t *testing.T) {
		api := f.HTTPSOnly()
		to := "http://registry.test:" + strings.Split(plainHost, ":")[1] + "/refused"
		_, _, _, err := api.Document(t.Context(), mustURL(t, start+"/start?to="+url.QueryEscape(to)), http.Header{"Authorization": {"Bearer sekrit"}}, 1<<10)
		if err == nil || !strings.Contains(err.Error(), "refused the redirect") || !strings.Contains(err.Error(), to) {
			t.Errorf("redirect to http: error %v, want a refused redirect naming %s", err, to)
		}
		_, _, _, err = api.Document(t.Context(), mustURL(t, to+"?token=abc"), nil, 1<<10)
		if err == nil || !strings.Contains(err.Error(), "only over https") || strings.Contains(err.Error(), "abc") {
			t.Errorf("http URL: error %v, want a refusal without the token", err)
		}
		if _, ok := a.got(to); ok {
			t.Errorf("%s was requested", to)
		}
	})
}

// loopbackFetcher is a fetcher trusting ca that connects every host name
// to 127.0.0.1.
func loopbackFetcher(t *testing.T, ca *testca.CA) *httpx.Fetcher {
	t.Helper()
	tr := trusting(t, ca)
	tr.DialContext = dialLoopback
	return httpx.NewFetcher(httpx.NewClient(tr, "test", httpx.MaxRedirects, 0), testPolicy())
}

// dialLoopback connects every host name to 127.0.0.1, at its port.
func dialLoopback(ctx context.Context, network, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
}

// trickle serves, after its headers, one byte every every until the client
// goes away.
func trickle(every time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			if http.NewResponseController(w).Flush() != nil {
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(every):
			}
		}
	})
}

// steady serves n chunks of size bytes, one every every.
func steady(n, size int, every time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(n*size))
		for i := range n {
			if i > 0 {
				time.Sleep(every)
			}
			if _, err := w.Write(make([]byte, size)); err != nil || http.NewResponseController(w).Flush() != nil {
				return
			}
		}
	})
}

// TestSpeedLimit: a body that trickles (every byte resets the stall timer)
// fails each attempt after SpeedTime and is retried, for documents and
// downloads alike; a slow but steady one above the limit succeeds.
func TestSpeedLimit(t *testing.T) {
	ca := testca.New(t)
	p := testPolicy()
	p.Retries, p.SpeedLimit, p.SpeedTime = 2, 1024, 300*time.Millisecond
	drip, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) { trickle(50*time.Millisecond).ServeHTTP(w, r) })
	dripSrv := tlsServer(t, ca, drip)
	f, s := fetcherFor(t, ca, p)

	for _, kind := range []string{"document", "download"} {
		t.Run(kind, func(t *testing.T) {
			n.Store(0)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			began := time.Now()
			var err error
			if kind == "document" {
				_, _, _, err = f.Document(ctx, mustURL(t, dripSrv.URL+"/doc"), nil, 1<<20)
			} else {
				err = f.Fetch(ctx, mustURL(t, dripSrv.URL+"/zip"), nil, &memSink{})
			}
			if err == nil || !strings.Contains(err.Error(), "less than the speed limit of 1024 bytes a second") || !strings.Contains(err.Error(), "after 3 attempts") {
				t.Fatalf("error %v; want a speed-limit failure after 3 attempts", err)
			}
			if d := time.Since(began); d > 5*time.Second {
				t.Errorf("took %s, want about 3 × 300ms", d)
			}
			if n.Load() != 3 {
				t.Errorf("%d requests, want 3", n.Load())
			}
		})
	}
	if len(s.recorded()) != 4 {
		t.Errorf("waits %v, want 2 retries each", s.recorded())
	}

	t.Run("slow but steady", func(t *testing.T) {
		srv := tlsServer(t, ca, steady(8, 1024, 100*time.Millisecond)) // 10 KiB/s
		sink := &memSink{}
		if err := f.Fetch(t.Context(), mustURL(t, srv.URL+"/zip"), nil, sink); err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if sink.Len() != 8*1024 {
			t.Errorf("got %d bytes", sink.Len())
		}
	})
}

// limitedSink is a memSink with a Limit.
type limitedSink struct {
	memSink
	limit int64
}

func (l *limitedSink) Limit() int64 { return l.limit }

// TestFetchCapsTheBody: a body longer than MaxBodyBytes (or the sink's
// Limit) fails for good, whether its Content-Length says so or not, and
// the sink never gets a byte past the cap.
func TestFetchCapsTheBody(t *testing.T) {
	ca := testca.New(t)
	const huge = 64 << 20
	var mu sync.Mutex
	served := map[string]int64{}
	h, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/announced" {
			w.Header().Set("Content-Length", strconv.Itoa(huge))
		}
		chunk := make([]byte, 32<<10)
		for sent := 0; sent < huge; sent += len(chunk) {
			k, err := w.Write(chunk)
			mu.Lock()
			served[r.URL.Path] += int64(k)
			mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	srv := tlsServer(t, ca, h)
	p := testPolicy()
	p.MaxBodyBytes = 1 << 20
	f, s := fetcherFor(t, ca, p)
	for _, tt := range []struct {
		path  string
		sink  httpx.Sink
		limit int64
	}{
		{"/announced", &memSink{}, 1 << 20},
		{"/streamed", &memSink{}, 1 << 20},
		{"/streamed-to-limited-sink", &limitedSink{limit: 100 << 10}, 100 << 10},
	} {
		t.Run(tt.path, func(t *testing.T) {
			n.Store(0)
			err := f.Fetch(t.Context(), mustURL(t, srv.URL+tt.path), nil, tt.sink)
			if !errors.Is(err, httpx.ErrTooLarge) || !strings.Contains(err.Error(), "exceeds the limit of "+strconv.FormatInt(tt.limit, 10)) {
				t.Fatalf("error %v; want ErrTooLarge naming the limit %d", err, tt.limit)
			}
			var got int
			switch s := tt.sink.(type) {
			case *memSink:
				got = s.Len()
			case *limitedSink:
				got = s.Len()
			}
			if int64(got) > tt.limit {
				t.Errorf("the sink holds %d bytes, more than the limit %d", got, tt.limit)
			}
			if n.Load() != 1 {
				t.Errorf("%d requests: a body over the limit was retried", n.Load())
			}
		})
	}
	if len(s.recorded()) != 0 {
		t.Errorf("waits %v", s.recorded())
	}
	srv.CloseClientConnections()
	mu.Lock()
	defer mu.Unlock()
	for path, n := range served {
		if n >= huge/2 {
			t.Errorf("%s: the server could write %d bytes: the client kept reading", path, n)
		}
	}
}

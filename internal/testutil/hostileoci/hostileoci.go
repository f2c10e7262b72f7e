// Package hostileoci is a hostile OCI registry for tests: a TLS reverse
// proxy in front of a real registry (registrytest's docker-registry) that
// passes every request through, credentials included, except those a
// fault it is set to takes over: a tag list whose pages always have a
// next one (a Link header), a blob that stops coming half-way.
package hostileoci

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// Fault is what the proxy does instead of passing a request through.
type Fault int

const (
	// None passes every request through.
	None Fault = iota
	// EndlessTags answers every tag list request itself with a page of
	// PageTags tags (none a version's) and a Link header naming the next
	// page: a tag list without end.
	EndlessTags
	// StallBlobs sends the headers and the first half of every blob a
	// GET asks for, then nothing (until the client hangs up).
	StallBlobs
	// HangManifestPuts never answers a manifest PUT (until the client
	// hangs up): a registry that stopped answering in the middle of a
	// publication.
	HangManifestPuts
)

// PageTags is how many tags an EndlessTags page lists.
const PageTags = 1000

// Proxy is a hostile registry in front of a real one.
type Proxy struct {
	// Host is the proxy's "127.0.0.1:PORT", the registry's name in
	// repository references. Its certificate is made by the CA given to
	// Start.
	Host string

	rp   *httputil.ReverseProxy
	done chan struct{}

	mu    sync.Mutex
	fault Fault

	failLeft int          // requests still to answer with 503 (FailNext)
	dropLeft int          // requests still to drop unanswered (DropNext)
	failed   atomic.Int64 // requests FailNext answered
	pages    atomic.Int64 // tag list pages the proxy answered
	sent     atomic.Int64 // blob bytes StallBlobs sent
	hung     atomic.Int64 // manifest PUTs HangManifestPuts holds or held
}

// Start runs a proxy to the registry at target (https://HOST:PORT, with a
// certificate of ca, which also makes the proxy's).
func Start(t testing.TB, ca *testca.CA, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{done: make(chan struct{})}
	p.rp = httputil.NewSingleHostReverseProxy(u)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	p.rp.Transport = tr
	hs := httptest.NewUnstartedServer(p)
	hs.TLS = ca.TLSConfig(t)
	hs.StartTLS()
	t.Cleanup(func() {
		close(p.done)
		hs.CloseClientConnections()
		hs.Close()
	})
	p.Host = strings.TrimPrefix(hs.URL, "https://")
	return p
}

// Set makes the proxy commit fault from now on.
func (p *Proxy) Set(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// FailNext makes the proxy answer the next n requests, whatever they ask,
// with 503 Service Unavailable, as an overloaded registry does; the
// requests after them pass through.
func (p *Proxy) FailNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLeft = n
}

// DropNext makes the proxy close the connection of the next n requests
// without an answer, as a proxy or a registry restarting does.
func (p *Proxy) DropNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropLeft = n
}

// Failed is how many requests FailNext's answers went to.
func (p *Proxy) Failed() int64 { return p.failed.Load() }

// Pages is how many tag list pages EndlessTags answered.
func (p *Proxy) Pages() int64 { return p.pages.Load() }

// Hung is how many manifest PUTs HangManifestPuts has held.
func (p *Proxy) Hung() int64 { return p.hung.Load() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault, fail, drop := p.fault, p.failLeft > 0, p.dropLeft > 0
	if fail {
		p.failLeft--
	}
	if drop {
		p.dropLeft--
	}
	p.mu.Unlock()
	if drop {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	if fail {
		p.failed.Add(1)
		http.Error(w, `{"errors":[{"code":"UNAVAILABLE","message":"busy"}]}`, http.StatusServiceUnavailable)
		return
	}
	switch {
	case fault == EndlessTags && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/tags/list"):
		p.endlessTags(w, r)
	case fault == StallBlobs && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:"):
		p.stallBlob(w, r)
	case fault == HangManifestPuts && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/"):
		p.hung.Add(1)
		select {
		case <-r.Context().Done():
		case <-p.done:
		}
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// endlessTags answers a tag list request with a page that has a next one.
func (p *Proxy) endlessTags(w http.ResponseWriter, r *http.Request) {
	n := p.pages.Add(1)
	repo := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v2/"), "/tags/list")
	tags := make([]string, PageTags)
	for i := range tags {
		tags[i] = fmt.Sprintf("junk-%d-%d", n, i)
	}
	body, _ := json.Marshal(map[string]any{"name": repo, "tags": tags})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?n=%d&last=%s>; rel="next"`, repo, PageTags, tags[len(tags)-1]))
	_, _ = w.Write(body)
}

// stallBlob sends half of the blob, then waits for the client to give up.
func (p *Proxy) stallBlob(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.WriteHeader(rec.Code)
	if rec.Code != http.StatusOK {
		_, _ = w.Write(body)
		return
	}
	n, _ := w.Write(body[:len(body)/2])
	p.sent.Add(int64(n))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

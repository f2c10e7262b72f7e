// Package hostiles3 is a hostile S3 endpoint for tests: a TLS reverse
// proxy (path-style addressing) in front of a real S3-compatible server
// that passes every request through, except those a fault it is set to
// takes over: a listing that never ends (pages that always have a next
// one, or one page whose body never ends), an object that stops coming
// half-way, an object larger than its listing says, a PUT that loses a
// race with another client's delete.
//
// The proxy leaves the Host header as the client sent it (the proxy's
// address), which is part of the request's signature: the server checks
// the signature against it.
package hostiles3

import (
	"crypto/tls"
	"fmt"
	"io"
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
	// EndlessPages answers every ListObjectsV2 request itself with a page
	// of PageKeys keys (under the prefix asked for, none a mirror's file)
	// that is truncated and names a new continuation token: a listing
	// without end.
	EndlessPages
	// EndlessListing answers every ListObjectsV2 request with a body that
	// starts like a listing and never ends (until the client hangs up).
	EndlessListing
	// StallObjects sends the headers and the first half of every object a
	// GET asks for whose key Match selects, then nothing (until the client
	// hangs up).
	StallObjects
	// LargerObjects sends every object a GET asks for whose key Match
	// selects, then Extra more bytes, without a Content-Length: an object
	// larger than the listing says.
	LargerObjects
	// RacedPuts answers the first PUT of each key Match selects with 409
	// ExistingObjectIsDirectory, without passing it on, as a store that
	// keeps objects as files does when another client's delete removes
	// the directory the PUT was creating; later PUTs pass through.
	RacedPuts
)

// PageKeys is how many keys an EndlessPages page lists.
const PageKeys = 100

// Extra is how many bytes LargerObjects adds to an object.
const Extra = 256 << 20

// Proxy is a hostile S3 endpoint in front of a real one.
type Proxy struct {
	// URL is the proxy's endpoint, https://127.0.0.1:PORT, for
	// AWS_ENDPOINT_URL_S3.
	URL string
	// CAFile is the PEM file of the CA of the proxy's certificate, for
	// AWS_CA_BUNDLE.
	CAFile string

	rp   *httputil.ReverseProxy
	done chan struct{}

	mu    sync.Mutex
	fault Fault
	match func(key string) bool

	listings atomic.Int64 // listing requests the proxy answered
	sent     atomic.Int64 // body bytes the proxy's faults sent
	raced    map[string]bool

	failLeft   int    // requests still to answer with 503 SlowDown
	failed     int64  // requests answered so by FailNext
	retryAfter string // the Retry-After of those answers
}

// Start runs a proxy to the S3 endpoint target (http or https; for
// https, the proxy trusts ca's certificates and the system's). ca makes
// the proxy's own certificate.
func Start(t testing.TB, ca *testca.CA, target string) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	p := &Proxy{CAFile: caFile, done: make(chan struct{})}
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
	p.URL = hs.URL
	return p
}

// Set makes the proxy commit fault from now on; match selects the keys
// of StallObjects, LargerObjects and RacedPuts (nil: every key).
func (p *Proxy) Set(f Fault, match func(key string) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault, p.match = f, match
}

// FailNext makes the proxy answer the next n requests, whatever they
// ask, with 503 SlowDown (S3's "reduce your request rate"), carrying a
// Retry-After header of retryAfter unless it is empty, as a throttled
// store does; the requests after them pass through.
func (p *Proxy) FailNext(n int, retryAfter string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLeft, p.retryAfter = n, retryAfter
}

// Failed is how many requests FailNext's answers went to.
func (p *Proxy) Failed() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

// slowDown answers r with 503 SlowDown if FailNext has answers left.
func (p *Proxy) slowDown(w http.ResponseWriter) bool {
	p.mu.Lock()
	if p.failLeft <= 0 {
		p.mu.Unlock()
		return false
	}
	p.failLeft--
	p.failed++
	retryAfter := p.retryAfter
	p.mu.Unlock()
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
	return true
}

// raceOnce says whether key's PUT is the first the proxy sees.
func (p *Proxy) raceOnce(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.raced[key] {
		return false
	}
	if p.raced == nil {
		p.raced = map[string]bool{}
	}
	p.raced[key] = true
	return true
}

// Listings is how many listing requests a fault answered.
func (p *Proxy) Listings() int64 { return p.listings.Load() }

// Sent is how many body bytes the faults sent.
func (p *Proxy) Sent() int64 { return p.sent.Load() }

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	fault, match := p.fault, p.match
	p.mu.Unlock()
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	listing := r.Method == http.MethodGet && key == "" && r.URL.Query().Get("list-type") == "2"
	object := r.Method == http.MethodGet && key != "" && (match == nil || match(key))
	if p.slowDown(w) {
		return
	}
	switch {
	case fault == EndlessPages && listing:
		p.endlessPage(w, r, bucket)
	case fault == EndlessListing && listing:
		p.endlessListing(w, r, bucket)
	case fault == StallObjects && object:
		p.stallObject(w, r)
	case fault == LargerObjects && object:
		p.largerObject(w, r)
	case fault == RacedPuts && r.Method == http.MethodPut && key != "" && (match == nil || match(key)) && p.raceOnce(key):
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<Error><Code>ExistingObjectIsDirectory</Code><Message>Existing Object is a directory.</Message><Key>`+key+`</Key></Error>`)
	default:
		p.rp.ServeHTTP(w, r)
	}
}

// endlessPage answers a listing request with a truncated page.
func (p *Proxy) endlessPage(w http.ResponseWriter, r *http.Request, bucket string) {
	n := p.listings.Add(1)
	prefix := r.URL.Query().Get("prefix")
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>1000</MaxKeys>`+
		`<IsTruncated>true</IsTruncated><NextContinuationToken>page-%d</NextContinuationToken>`, bucket, prefix, PageKeys, n)
	for i := range PageKeys {
		fmt.Fprintf(&b, `<Contents><Key>%sjunk/%d/%d.bin</Key><Size>1</Size><ETag>"x"</ETag></Contents>`, prefix, n, i)
	}
	b.WriteString(`</ListBucketResult>`)
	w.Header().Set("Content-Type", "application/xml")
	p.sent.Add(int64(b.Len()))
	_, _ = io.WriteString(w, b.String())
}

// endlessListing answers a listing request with a body without end.
func (p *Proxy) endlessListing(w http.ResponseWriter, r *http.Request, bucket string) {
	p.listings.Add(1)
	w.Header().Set("Content-Type", "application/xml")
	prefix := r.URL.Query().Get("prefix")
	head := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>%s</Name><Prefix>%s</Prefix><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>`, bucket, prefix)
	if !p.write(w, r, []byte(head)) {
		return
	}
	chunk := []byte(strings.Repeat(`<Contents><Key>`+prefix+`junk/endless.bin</Key><Size>1</Size></Contents>`, 512))
	for p.write(w, r, chunk) {
	}
}

// stallObject sends half of the object, then waits for the client to
// give up.
func (p *Proxy) stallObject(w http.ResponseWriter, r *http.Request) {
	status, header, body := p.fetch(r)
	copyHeader(w, header)
	w.WriteHeader(status)
	if !p.write(w, r, body[:len(body)/2]) {
		return
	}
	select {
	case <-r.Context().Done():
	case <-p.done:
	}
}

// largerObject sends the object and Extra bytes more.
func (p *Proxy) largerObject(w http.ResponseWriter, r *http.Request) {
	status, header, body := p.fetch(r)
	copyHeader(w, header)
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	if !p.write(w, r, body) || status != http.StatusOK {
		return
	}
	chunk := make([]byte, 64<<10)
	for left := Extra; left > 0; left -= len(chunk) {
		if !p.write(w, r, chunk[:min(len(chunk), left)]) {
			return
		}
	}
}

// fetch has the real server answer r and returns its status, header and
// body.
func (p *Proxy) fetch(r *http.Request) (int, http.Header, []byte) {
	rec := httptest.NewRecorder()
	p.rp.ServeHTTP(rec, r)
	return rec.Code, rec.Header(), rec.Body.Bytes()
}

// write sends b and flushes it; false once the client or the test is
// gone.
func (p *Proxy) write(w http.ResponseWriter, r *http.Request, b []byte) bool {
	select {
	case <-p.done:
		return false
	case <-r.Context().Done():
		return false
	default:
	}
	n, err := w.Write(b)
	p.sent.Add(int64(n))
	if err != nil {
		return false
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

func copyHeader(w http.ResponseWriter, h http.Header) {
	for k, vs := range h {
		w.Header()[k] = vs
	}
}

// Environ returns environ with the S3 endpoint set to the proxy and its
// CA trusted (AWS_ENDPOINT_URL_S3, AWS_CA_BUNDLE).
func (p *Proxy) Environ(environ []string) []string {
	out := []string{"AWS_ENDPOINT_URL_S3=" + p.URL, "AWS_CA_BUNDLE=" + p.CAFile}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL_S3=") && !strings.HasPrefix(kv, "AWS_CA_BUNDLE=") {
			out = append(out, kv)
		}
	}
	return out
}

package cli

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// ignoringProxy plays an S3-compatible store that accepts conditional
// writes but does not enforce them: a reverse proxy in front of a real
// versitygw that strips If-Match and If-None-Match from every request and
// signs it again with the server's credentials (the headers are part of
// the signature). It records the requests that write ("METHOD key").
type ignoringProxy struct {
	srv    *s3test.Server
	bucket string
	rp     *httputil.ReverseProxy

	mu       sync.Mutex
	writes   []string
	stripped int
}

func startIgnoringProxy(t *testing.T, srv *s3test.Server, bucket string) (*ignoringProxy, string) {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &ignoringProxy{srv: srv, bucket: bucket, rp: httputil.NewSingleHostReverseProxy(target)}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	return p, hs.URL
}

func (p *ignoringProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+p.bucket), "/")
	strip := r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != ""
	p.mu.Lock()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		p.writes = append(p.writes, r.Method+" "+key)
	}
	if strip && r.Method == http.MethodPut {
		p.stripped++
	}
	p.mu.Unlock()
	if strip && r.Method == http.MethodPut {
		r.Header.Del("If-Match")
		r.Header.Del("If-None-Match")
		if err := resign(r, p.srv); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

// resign signs a request again with srv's credentials, after a proxy
// changed headers the client signed. It is signed for the host the client
// addressed (r.Host, the proxy's), which a reverse proxy passes on, with
// the payload hash the client sent.
func resign(r *http.Request, srv *s3test.Server) error {
	r.Header.Del("Authorization")
	signer := v4.NewSigner()
	creds := aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}
	return signer.SignHTTP(r.Context(), creds, r, r.Header.Get("X-Amz-Content-Sha256"), "s3", s3test.Region, time.Now().UTC())
}

func (p *ignoringProxy) seen() (writes []string, stripped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.writes), p.stripped
}

// A store that takes conditional writes without enforcing them would let
// two builds overwrite each other's index.json, both exiting 0. tfmirror
// finds out before it publishes anything (a probe object under its
// private directory, written with conditions that must fail) and stops
// with an error naming the bucket and the condition the store ignored;
// the bucket holds nothing of the mirror. A build that has nothing to
// write makes no write request at all, probe included.
func TestBucketIgnoringConditionsIsRefused(t *testing.T) {
	srv := s3test.Start(t)
	s := newThrottleSetup(t, srv, "ignoring", "1.0.0", "1.1.0")
	uri := srv.URI("ignoring", "site")
	proxy, proxyURL := startIgnoringProxy(t, srv, "ignoring")

	for _, asJSON := range []bool{false, true} {
		args := []string{"build", "--out", uri}
		if asJSON {
			args = append(args, "--json")
		}
		code, stdout, stderr := s.run(t, s.through(proxyURL), args...)
		t.Logf("exit %d:\n%s%s", code, stdout, stderr)
		s.checkNoSecret(t, stdout+stderr)
		if code != ExitUsage {
			t.Fatalf("build into a store that ignores conditional writes: exit %d, want %d (the store cannot hold the mirror)", code, ExitUsage)
		}
		out := stdout + stderr
		for _, want := range []string{"bucket ignoring", "If-None-Match: *", "does not enforce conditional writes"} {
			if !strings.Contains(out, want) {
				t.Errorf("the error does not say %q:\n%s", want, out)
			}
		}
	}
	writes, stripped := proxy.seen()
	if stripped == 0 {
		t.Fatal("no conditional write went through the proxy: the fault was not injected")
	}
	for _, w := range writes {
		if _, key, _ := strings.Cut(w, " "); !strings.HasPrefix(key, "site/.tfmirror/probe/") {
			t.Errorf("%s was requested: only the probe may be written into a store that ignores conditions", w)
		}
	}
	if files := bucketFiles(t, srv, "ignoring", ""); len(files) != 0 {
		t.Errorf("the bucket holds %d objects, want none (the probe deleted, nothing of the mirror published): %v", len(files), slices.Sorted(maps.Keys(files)))
	}

	// Built directly (the server enforces the conditions), the mirror is
	// complete, and the probe object is gone.
	if code, stdout, stderr := s.run(t, s.direct, "build", "--out", uri); code != ExitOK {
		t.Fatalf("build directly: exit %d\n%s%s", code, stdout, stderr)
	}
	for key := range bucketFiles(t, srv, "ignoring", "") {
		if strings.Contains(key, "/.tfmirror/") {
			t.Errorf("s3://ignoring/%s was left behind", key)
		}
	}
	// A rebuild through the proxy has nothing to write: no write request
	// at all, so no probe either, and it succeeds.
	before := len(writes)
	if code, stdout, stderr := s.run(t, s.through(proxyURL), "build", "--out", uri); code != ExitOK {
		t.Fatalf("no-op rebuild through the proxy: exit %d\n%s%s", code, stdout, stderr)
	}
	if writes, _ := proxy.seen(); len(writes) != before {
		t.Errorf("a rebuild with nothing to write made write requests: %q", writes[before:])
	}

	// A prune takes the exclusive lock, itself a conditional write: it is
	// refused the same way, before the lock, and deletes nothing.
	s.manifest(t, "1.1.0")
	published := bucketFiles(t, srv, "ignoring", "site/")
	code, stdout, stderr := s.run(t, s.through(proxyURL), "prune", "--out", uri, "--grace", "0")
	t.Logf("prune: exit %d\n%s%s", code, stdout, stderr)
	if code != ExitUsage || !strings.Contains(stdout+stderr, "does not enforce conditional writes") {
		t.Errorf("prune of a store that ignores conditional writes: exit %d, want %d naming the problem", code, ExitUsage)
	}
	writes, _ = proxy.seen()
	for _, w := range writes[before:] {
		if _, key, _ := strings.Cut(w, " "); !strings.HasPrefix(key, "site/.tfmirror/probe/") {
			t.Errorf("the prune requested %s", w)
		}
	}
	if now := bucketFiles(t, srv, "ignoring", "site/"); len(now) != len(published) {
		t.Errorf("the prune changed the bucket: %d objects, were %d", len(now), len(published))
	}
}

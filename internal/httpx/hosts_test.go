package httpx_test

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// trickleBody answers with a body of size bytes announced, then sends one
// byte every every until it is done or the client goes away.
func trickleBody(w http.ResponseWriter, r *http.Request, size int, every time.Duration) {
	w.Header().Set("Content-Length", strconv.Itoa(size))
	w.WriteHeader(http.StatusOK)
	for i := 0; i < size; i++ {
		if _, err := w.Write([]byte{'x'}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			return
		case <-time.After(every):
		}
	}
}

// slowPolicy fails a body slower than 100 bytes a second over 200ms, and
// retries 4 times without waiting long.
func slowPolicy() httpx.Policy {
	p := testPolicy()
	p.SpeedLimit, p.SpeedTime = 100, 200*time.Millisecond
	p.Retries, p.MinBackoff, p.MaxBackoff = 4, time.Millisecond, time.Millisecond
	return p
}

// fetchAll fetches n archives of base in parallel (8 at a time, as a
// build does) and returns their errors and how long it took.
func fetchAll(t *testing.T, f *httpx.Fetcher, base string, n int) ([]error, time.Duration) {
	t.Helper()
	errs := make([]error, n)
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	began := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var sink memSink
			errs[i] = f.Fetch(t.Context(), mustURL(t, fmt.Sprintf("%s/archive-%d.zip", base, i)), nil, &sink)
		}()
	}
	wg.Wait()
	return errs, time.Since(began)
}

// TestSlowHostWrittenOff: an origin that trickles every archive (20 bytes
// a second, under a speed limit of 100) fails 12 archives fetched 8 at a
// time. Without a record of hosts, each archive spends its 5 attempts (60
// requests); with one, the host is written off after 3 slow transfers,
// every other archive fails at once with an error naming the host, and
// the whole takes about one speed-limit window instead of five.
func TestSlowHostWrittenOff(t *testing.T) {
	ca := testca.New(t)
	var requests atomic.Int32
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		trickleBody(w, r, 1000, 50*time.Millisecond)
	}))
	host := strings.TrimPrefix(srv.URL, "https://")

	f, _ := fetcherFor(t, ca, slowPolicy())
	errs, without := fetchAll(t, f, srv.URL, 12)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "less than the speed limit") || !strings.Contains(err.Error(), "after 5 attempts") {
			t.Fatalf("archive %d without a record of hosts: %v, want a speed-limit failure after 5 attempts", i, err)
		}
	}
	if n := requests.Load(); n != 60 {
		t.Errorf("without a record of hosts: %d requests, want 60", n)
	}

	requests.Store(0)
	f, _ = fetcherFor(t, ca, slowPolicy())
	f.Hosts = httpx.NewHosts()
	errs, with := fetchAll(t, f, srv.URL, 12)
	written := 0
	for i, err := range errs {
		var he *httpx.HostError
		switch {
		case err == nil:
			t.Errorf("archive %d: fetched from a trickling origin", i)
		case errors.As(err, &he):
			written++
			if he.Host != host || he.Strikes < httpx.SlowHostStrikes || !strings.Contains(err.Error(), "gave up on "+host+" for the rest of this run") {
				t.Errorf("archive %d: %v (%+v), want the host %s written off", i, err, he, host)
			}
		case !strings.Contains(err.Error(), "less than the speed limit"):
			t.Errorf("archive %d: %v, want a speed-limit failure or the host written off", i, err)
		}
	}
	if written < 12-8 {
		t.Errorf("%d archives failed for the host being written off, want at least the 4 not started in the first wave", written)
	}
	if n := requests.Load(); n > 8+httpx.SlowHostStrikes {
		t.Errorf("with a record of hosts: %d requests, want at most the first wave and a few", n)
	}
	t.Logf("12 archives from a trickling origin: %s without a record of hosts, %s with", without, with)
	if with > 2*time.Second || with*2 > without {
		t.Errorf("with a record of hosts the fetches took %s (without: %s), want well under 2s and half", with, without)
	}

	// Another host (another port) is not written off with it.
	good := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(payload) }))
	var sink memSink
	if err := f.Fetch(t.Context(), mustURL(t, good.URL+"/a.zip"), nil, &sink); err != nil {
		t.Errorf("a fetch from another host after one was written off: %v", err)
	}
}

// TestSlowHostRecovers: a host whose transfers are slow now and then, each
// followed by one that completes, is never written off: 12 archives, each
// slow on its first request, all arrive.
func TestSlowHostRecovers(t *testing.T) {
	ca := testca.New(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := !seen[r.URL.Path]
		seen[r.URL.Path] = true
		mu.Unlock()
		if first && r.URL.Path != "/archive-0.zip" {
			trickleBody(w, r, 1000, 50*time.Millisecond)
			return
		}
		_, _ = w.Write(payload)
	}))
	f, _ := fetcherFor(t, ca, slowPolicy())
	f.Hosts = httpx.NewHosts()
	for i := range 12 { // one at a time: each slow transfer is followed by a complete one
		var sink memSink
		if err := f.Fetch(t.Context(), mustURL(t, fmt.Sprintf("%s/archive-%d.zip", srv.URL, i)), nil, &sink); err != nil || sink.Len() != len(payload) {
			t.Fatalf("archive %d from a host that recovers: %d bytes, %v", i, sink.Len(), err)
		}
	}
}

package registry_test

import (
	"bytes"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// failFirst serves failure to the first request and h to the others.
func failFirst(failure, h http.HandlerFunc) http.HandlerFunc {
	var n atomic.Int32
	return func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			failure(w, r)
			return
		}
		h(w, r)
	}
}

func TestAPICallsAndDownloadsAreRetried(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	payload := bytes.Repeat([]byte("archive "), 10000)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /acme/foo/versions", failFirst(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, "busy", http.StatusServiceUnavailable)
	}, serveJSON(`{"versions":[{"version":"1.0.0"}]}`)))
	mux.HandleFunc("GET /files/foo.zip", failFirst(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.Write(payload[:1000]) // and the connection drops
	}, serveAs("application/zip", string(payload))))
	mux.HandleFunc("GET /acme/locked/versions", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	})
	srv := newServer(t, ca, mux)
	c := newClient(t, ca, map[addrs.Hostname]map[string]string{"registry.example.com": {"providers.v1": srv.URL + "/"}}, nil)

	list, err := c.AvailableVersions(ctx(t), provider("registry.example.com", "acme", "foo"))
	if err != nil || len(list) != 1 {
		t.Fatalf("AvailableVersions = %v, %v", list, err)
	}
	got, err := fetch(t, c.FileLocation(mustURL(t, srv.URL+"/files/foo.zip")))
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Errorf("Fetch: got %d bytes, want exactly the %d served", len(got), len(payload))
	}

	// A 401 is not retried, and still explained.
	_, err = c.AvailableVersions(ctx(t), provider("registry.example.com", "acme", "locked"))
	wantErrContains(t, err, "401 Unauthorized", "TF_TOKEN_registry_example_com")
	var se *httpx.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusUnauthorized {
		t.Errorf("errors.As(*StatusError) = %v", se)
	}
	want := []string{
		"GET /acme/foo/versions",
		"GET /acme/foo/versions",
		"GET /files/foo.zip",
		"GET /files/foo.zip",
		"GET /acme/locked/versions",
	}
	if diff := cmp.Diff(want, srv.paths()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestPersistentServerErrorNamesAttempts(t *testing.T) {
	t.Parallel()
	_, call := metaServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	_, err := call()
	wantErrContains(t, err, docPath+" returned 502 Bad Gateway (after 5 attempts)")
}

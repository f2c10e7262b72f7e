package ocistore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// cdn is a second TLS server standing for the object store a registry
// sends blob downloads to: it serves the blob (read from the registry
// with the registry's credentials, as a presigned URL would give it) and
// records the headers every request brought.
type cdn struct {
	url     string
	mu      sync.Mutex
	headers []http.Header
}

func startCDN(t *testing.T, srv *registrytest.Server, host string) *cdn {
	t.Helper()
	c := &cdn{}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.headers = append(c.headers, r.Header.Clone())
		c.mu.Unlock()
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, srv.URL()+r.URL.Path, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.SetBasicAuth(srv.Username, srv.Password)
		resp, err := srv.CA.Client().Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	ts.TLS = srv.CA.TLSConfig(t, "localhost", "127.0.0.1")
	ts.StartTLS()
	t.Cleanup(ts.Close)
	c.url = strings.Replace(ts.URL, "127.0.0.1", host, 1)
	return c
}

func (c *cdn) requests() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...)
}

// TestRedirectDropsCredentials: a registry that redirects blob downloads
// to another origin (S3, a CDN) never gets the registry's Authorization
// header sent there, whether the other origin has another host name or
// only another port on the same host (which net/http alone would send it
// to).
func TestRedirectDropsCredentials(t *testing.T) {
	ctx := t.Context()
	srv, _, rel := pushedFoo(t)
	foo := rel.Provider
	want := rel.zips["linux_amd64"]

	for _, host := range []string{"localhost", "127.0.0.1"} {
		t.Run("to "+host, func(t *testing.T) {
			c := startCDN(t, srv, host)
			var mu sync.Mutex
			var redirected []string
			authSeen := false
			proxy := startProxy(t, srv, func(w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
					mu.Lock()
					redirected = append(redirected, r.URL.Path)
					authSeen = authSeen || r.Header.Get("Authorization") != ""
					mu.Unlock()
					http.Redirect(w, r, c.url+r.URL.Path+"?X-Amz-Signature=presigned", http.StatusTemporaryRedirect)
					return true
				}
				return false
			})
			s := openStore(t, "oci://"+proxy.host+"/tf/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + proxy.dockerConfig})
			rc, err := s.OpenArchive(ctx, foo, rel.Version, addrs.MustParsePlatform("linux_amd64"))
			if err != nil {
				t.Fatalf("OpenArchive through a redirecting registry: %v", err)
			}
			if got := readAll(t, rc); !bytes.Equal(got, want) {
				t.Fatal("OpenArchive through a redirect: other bytes")
			}
			if _, err := s.ReadRecord(ctx, foo, rel.Version); err != nil {
				t.Fatalf("ReadRecord through a redirecting registry: %v", err)
			}
			reqs := c.requests()
			if len(redirected) == 0 || len(reqs) < len(redirected) {
				t.Fatalf("the registry redirected %d blob downloads, the other server got %d requests", len(redirected), len(reqs))
			}
			if !authSeen {
				t.Error("the registry itself never got the credentials: the test proves nothing")
			}
			for _, h := range reqs {
				if a := h.Get("Authorization"); a != "" {
					t.Errorf("the redirect target %s got an Authorization header (%d bytes)", c.url, len(a))
				}
			}
			t.Logf("%d blob downloads redirected to %s, none with credentials", len(reqs), c.url)
		})
	}
}

// TestNetHTTPForwardsToSamePortlessHost documents why the check above is
// needed: net/http alone sends the Authorization header of a request
// along a redirect to the same host name on another port. (A log, not a
// requirement: it is the standard library's behaviour.)
func TestNetHTTPForwardsToSamePortlessHost(t *testing.T) {
	srv := registrytest.StartWith(t, registrytest.Options{Anonymous: true})
	c := startCDN(t, srv, "127.0.0.1")
	front := httptest.NewUnstartedServer(http.RedirectHandler(c.url+"/v2/", http.StatusTemporaryRedirect))
	front.TLS = srv.CA.TLSConfig(t, "127.0.0.1")
	front.StartTLS()
	defer front.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, front.URL, nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := srv.CA.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	forwarded := len(c.requests()) > 0 && c.requests()[0].Get("Authorization") != ""
	t.Logf("net/http alone, redirect from %s to %s: Authorization forwarded = %v", front.URL, c.url, forwarded)
}

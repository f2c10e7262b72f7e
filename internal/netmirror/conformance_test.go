package netmirror_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/netmirror"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/layout/storetest"
)

// TestClientReader runs the reader conformance suite against a mirror
// directory served over HTTPS, as a web server publishes it.
func TestClientReader(t *testing.T) {
	storetest.TestReader(t, func(t *testing.T, dir string) layout.Reader {
		return serveDir(t, dir)
	})
}

// serveDir serves dir under /mirror/ over TLS, JSON as application/json,
// and returns a client of it.
func serveDir(t *testing.T, dir string) *netmirror.Client {
	t.Helper()
	files := http.FileServer(http.Dir(dir))
	ca := testca.New(t)
	srv := httptest.NewUnstartedServer(http.StripPrefix("/mirror", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".json") {
			w.Header().Set("Content-Type", "application/json")
		}
		files.ServeHTTP(w, r)
	})))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := httpx.DefaultPolicy()
	p.MinBackoff, p.MaxBackoff = time.Millisecond, time.Millisecond
	c, err := netmirror.New(srv.URL+"/mirror/", httpx.NewFetcher(ca.Client(), p))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

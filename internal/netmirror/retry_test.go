package netmirror_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/internal/netmirror"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

func TestClientRetries(t *testing.T) {
	var requests atomic.Int32
	ca := testca.New(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch requests.Add(1) {
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			w.Header().Set("Content-Length", "1000")
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"versions":`)) // and the connection drops
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"versions":{"1.0.0":{}}}`))
		}
	}))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c, err := netmirror.New(srv.URL, fetcher(ca.Client()))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := layout.NewTree(c).Versions(t.Context(), foo)
	if err != nil || len(vs) != 1 || !vs[0].Same(v1) {
		t.Fatalf("Versions = %v, %v", vs, err)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

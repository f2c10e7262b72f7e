package httpx_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// WatchTransport gives the bodies of a client that is not a Fetcher's the
// Fetcher's time bounds: a body that stalls fails after StallTimeout, one
// that trickles after SpeedTime, each read error naming the URL and
// matching the limit, a timeout as clients that retry see it; a steady one
// is read whole.
func TestWatchTransport(t *testing.T) {
	ca := testca.New(t)
	stalled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte("half"))
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	})
	for _, tt := range []struct {
		name    string
		handler http.Handler
		policy  httpx.Policy
		want    error
		message string
	}{
		{"stall", stalled, httpx.Policy{StallTimeout: 300 * time.Millisecond}, httpx.ErrStalled, "no data for 300ms (the stall timeout)"},
		{"trickle", trickle(50 * time.Millisecond), httpx.Policy{StallTimeout: time.Minute, SpeedLimit: 1000, SpeedTime: 300 * time.Millisecond}, httpx.ErrTooSlow, "less than the speed limit of 1000 bytes a second"},
		{"steady", steady(4, 1000, 50*time.Millisecond), httpx.Policy{StallTimeout: 300 * time.Millisecond, SpeedLimit: 1000, SpeedTime: 300 * time.Millisecond}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(tt.handler)
			srv.TLS = ca.TLSConfig(t)
			srv.StartTLS()
			t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
			base := srv.Client().Transport
			client := &http.Client{Transport: httpx.WatchTransport(base, tt.policy)}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/file?token=secret", nil)
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, err := io.ReadAll(resp.Body)
			took := time.Since(began)
			if tt.want == nil {
				if err != nil || len(data) != 4000 {
					t.Fatalf("read %d bytes, %v", len(data), err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("read: %v, want %v", err, tt.want)
			}
			var timeout interface{ Timeout() bool }
			if !errors.As(err, &timeout) || !timeout.Timeout() {
				t.Errorf("%v is not a timeout", err)
			}
			for _, want := range []string{srv.URL + "/file?token=xxxxx", tt.message} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if took > 3*time.Second {
				t.Errorf("the read failed after %s", took)
			}
		})
	}
}

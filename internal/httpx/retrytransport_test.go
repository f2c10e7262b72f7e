package httpx_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/testutil/notifytest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// retryClient is a client trusting ca whose transport retries by p, with
// the default predicate of a status: 5xx and 429 may go away.
func retryClient(t *testing.T, ca *testca.CA, p httpx.Policy) *http.Client {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	tr, err := httpx.NewTransport(httpx.Environment{CAFile: caFile}, httpx.Policy{ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: &httpx.RetryTransport{Base: tr, Policy: p,
		Retryable: func(resp *http.Response, err error) (bool, error) {
			if err != nil {
				return false, err
			}
			return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, nil
		}}}
}

// A request that fails in a way that may go away is sent again, body and
// all, as often as the policy says, each retry told with the URL (no
// credential), the attempt and the answer, after the policy's backoff.
func TestRetryTransport(t *testing.T) {
	ca := testca.New(t)
	var bodies []string
	h, n := counted(func(n int32, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if n <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := tlsServer(t, ca, h)
	policy := httpx.Policy{Retries: 2, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}
	c := retryClient(t, ca, policy)
	seen := &notifytest.Recorder{}
	req, err := http.NewRequestWithContext(notify.With(t.Context(), seen), http.MethodPut, srv.URL+"/v2/x/blobs/uploads/1?digest=sha256:ab&token=secret", strings.NewReader("blob"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK || string(b) != "ok" {
		t.Errorf("answer %s %q, want the third attempt's 200", resp.Status, b)
	}
	if n.Load() != 3 || strings.Join(bodies, ",") != "blob,blob,blob" {
		t.Errorf("%d requests with bodies %q, want 3 with the whole body each", n.Load(), bodies)
	}
	told := seen.Retries()
	if len(told) != 2 {
		t.Fatalf("retries told: %v, want 2", told)
	}
	for i, r := range told {
		e := r.String()
		if strings.Contains(e, "secret") || !strings.Contains(e, "/v2/x/blobs/uploads/1") ||
			!strings.Contains(e, fmt.Sprintf(" attempt %d: ", i+2)) || !strings.Contains(e, "503") {
			t.Errorf("retry %d told as %q: want the redacted URL, attempt %d and the status", i, e, i+2)
		}
		if d := r.Delay; d <= 0 || d > 4*time.Millisecond {
			t.Errorf("retry %d waits %s, want the policy's backoff", i, d)
		}
	}
}

// No more attempts than the policy allows; an answer asking to wait
// longer than tfmirror waits is returned as it is; a body that cannot be
// read again is sent once; a verdict of the predicate ends it with its
// error.
func TestRetryTransportBounds(t *testing.T) {
	ca := testca.New(t)
	retryAfter := ""
	h, n := counted(func(_ int32, w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	srv := tlsServer(t, ca, h)
	for _, tt := range []struct {
		name       string
		retries    int
		retryAfter string
		body       io.Reader
		want       int32
	}{
		{"no retries", 0, "", nil, 1},
		{"three retries", 3, "", nil, 4},
		{"an hour asked for", 3, "3600", nil, 1},
		{"a body read once", 3, "", io.MultiReader(strings.NewReader("stream")), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n.Store(0)
			retryAfter = tt.retryAfter
			c := retryClient(t, ca, httpx.Policy{Retries: tt.retries, MaxBackoff: time.Millisecond})
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/x", tt.body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable || n.Load() != tt.want {
				t.Errorf("%s after %d requests, want 503 after %d", resp.Status, n.Load(), tt.want)
			}
		})
	}

	refused := errors.New("refused")
	c := &http.Client{Transport: &httpx.RetryTransport{Base: http.DefaultTransport, Policy: httpx.Policy{Retries: 3},
		Retryable: func(*http.Response, error) (bool, error) { return false, refused }}}
	if _, err := c.Get(srv.URL + "/x"); !errors.Is(err, refused) {
		t.Errorf("Get: %v, want the predicate's error", err)
	}
}

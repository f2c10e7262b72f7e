package s3store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/hostiles3"
	"github.com/tfmirror/tfmirror/internal/testutil/notifytest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// throttledStore is a store behind a proxy that answers 503 SlowDown
// when told to, with the run's retries and a short backoff.
func throttledStore(t *testing.T, retries int) (*s3store.Store, *hostiles3.Proxy) {
	t.Helper()
	srv := s3test.Start(t)
	srv.CreateBucket(t, "throttled")
	proxy := hostiles3.Start(t, testca.New(t), srv.Endpoint)
	policy := httpx.Policy{Retries: retries, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}
	s := newStore(t, srv, "s3://throttled/site/", s3store.Config{Environ: proxy.Environ(srv.Environ()), Net: policy})
	lockStore(t, s)
	// The store's first write probes it: done here, before any fault.
	if err := s.Put(t.Context(), "v0/index.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	return s, proxy
}

// A bucket's requests are retried as the run's --retries says, no more,
// each retry told like a download's (the URL names the bucket and the
// object, the error the store's answer), after the policy's backoff.
func TestBucketRequestsFollowTheRetryPolicy(t *testing.T) {
	for _, tt := range []struct {
		name             string
		retries, fail    int
		wantErr          bool
		wantEvents, sent int
	}{
		{"no retries", 0, 1, true, 0, 1},
		{"two retries, both needed", 2, 2, false, 2, 2},
		{"two retries, not enough", 2, 5, true, 2, 3},
		{"the default four", 4, 10, true, 4, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, proxy := throttledStore(t, tt.retries)
			seen := &notifytest.Recorder{}
			ctx := notify.With(t.Context(), seen)
			proxy.FailNext(tt.fail, "")
			err := s.Put(ctx, "v1/index.json", layout.Content{Data: []byte("{}")})
			proxy.FailNext(0, "") // the unlock at the end gets through
			if (err != nil) != tt.wantErr {
				t.Fatalf("Put: %v, want an error: %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "SlowDown") {
				t.Errorf("the error does not say what the store answered: %v", err)
			}
			if got := proxy.Failed(); got != int64(tt.sent) {
				t.Errorf("%d throttled answers, want %d", got, tt.sent)
			}
			events := seen.Retries()
			if len(events) != tt.wantEvents {
				t.Fatalf("%d retry events, want %d: %+v", len(events), tt.wantEvents, events)
			}
			for i, e := range events {
				if e.Attempt != i+2 {
					t.Errorf("event %d says attempt %d, want %d", i, e.Attempt, i+2)
				}
				if !strings.HasSuffix(e.URL, "/throttled/site/v1/index.json") || strings.Contains(e.URL, "?") {
					t.Errorf("event %d names %q, want the object's URL without its query", i, e.URL)
				}
				if !strings.Contains(e.Err, "SlowDown") {
					t.Errorf("event %d's error does not say SlowDown: %s", i, e.Err)
				}
				if e.Delay < 5*time.Millisecond || e.Delay > 20*time.Millisecond {
					t.Errorf("event %d waits %s, want the policy's backoff (5ms to 20ms)", i, e.Delay)
				}
			}
		})
	}
}

// A Retry-After the store sends is waited for, up to what tfmirror waits
// at most; one longer ends the retries at once, saying so.
func TestBucketRetryAfter(t *testing.T) {
	s, proxy := throttledStore(t, 2)
	seen := &notifytest.Recorder{}
	ctx := notify.With(t.Context(), seen)
	proxy.FailNext(1, "1")
	began := time.Now()
	if err := s.Put(ctx, "v1/index.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if e := seen.Retries(); len(e) != 1 || e[0].Delay != time.Second {
		t.Errorf("retry events %+v, want one waiting the 1s the store asked for", e)
	}
	if took := time.Since(began); took < time.Second {
		t.Errorf("the retry came after %s, before the 1s the store asked for", took)
	}

	proxy.FailNext(1, "3600")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := s.Put(ctx, "v1/index.json", layout.Content{Data: []byte("{}")})
	if err == nil || !strings.Contains(err.Error(), "longer than the 5m0s tfmirror waits") {
		t.Fatalf("Put: %v, want the refusal to wait an hour", err)
	}
	if got := proxy.Failed(); got != 2 {
		t.Errorf("%d throttled answers, want 2 (no retry after the hour asked for)", got)
	}
}

// AWS_MAX_ATTEMPTS, which the AWS SDK reads from the process, does not
// change how often a bucket's requests are tried: the run's --retries
// does.
func TestBucketRetriesIgnoreAWSMaxAttempts(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	t.Setenv("AWS_RETRY_MODE", "adaptive")
	s, proxy := throttledStore(t, 2)
	proxy.FailNext(2, "")
	if err := s.Put(t.Context(), "v1/index.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatalf("Put with two retries after two throttled answers: %v", err)
	}
	if got := proxy.Failed(); got != 2 {
		t.Errorf("%d throttled answers, want 2", got)
	}
}

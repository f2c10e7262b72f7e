package httpx

import (
	"fmt"
	"net/http"
	"time"

	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/syncx"
)

// RetryTransport retries, by Policy, the round trips of a client whose
// callers cannot (a library's client: oras's registry client). What may
// be retried is Retryable's decision; how often and how long to wait is
// Policy's (Retries, its backoff, or the answer's Retry-After up to
// MaxRetryAfter), and each retry is told to the request context's
// notify.Handler, as a Fetcher's are. A request whose body cannot be read
// again (no GetBody) is sent once.
type RetryTransport struct {
	Base   http.RoundTripper
	Policy Policy
	// Retryable says whether an attempt's outcome may go away if tried
	// again; an error ends the retries with it.
	Retryable func(resp *http.Response, err error) (bool, error)
}

func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		resp, err := t.Base.RoundTrip(req)
		again, verdict := t.Retryable(resp, err)
		if verdict != nil {
			closeBody(resp, err)
			return nil, verdict
		}
		if !again || attempt > max(t.Policy.Retries, 0) || (req.Body != nil && req.GetBody == nil) {
			return resp, err
		}
		wait := t.Policy.Backoff(attempt)
		cause := err
		if err == nil {
			cause = fmt.Errorf("%s returned %s", Redact(req.URL), resp.Status)
			if d, ok := RetryAfter(resp.Header, time.Now()); ok {
				if d > MaxRetryAfter {
					return resp, nil // the caller reads the answer
				}
				wait = d
			}
		}
		if req.Body != nil {
			body, berr := req.GetBody()
			if berr != nil {
				return resp, err
			}
			req = req.Clone(ctx)
			req.Body = body
		}
		closeBody(resp, err)
		notify.Retry(ctx, Redact(req.URL), attempt+1, wait, cause)
		if serr := syncx.Sleep(ctx, wait); serr != nil {
			return nil, serr
		}
	}
}

// closeBody closes the body of an answer that will not be returned.
func closeBody(resp *http.Response, err error) {
	if err == nil && resp != nil {
		_ = resp.Body.Close()
	}
}

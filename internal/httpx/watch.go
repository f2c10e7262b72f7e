package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// ErrStalled and ErrTooSlow are the failures of a response body that a
// watch (WatchTransport, Watch) stopped: no byte for the Policy's
// StallTimeout, or fewer than its SpeedLimit bytes a second over a window
// of SpeedTime. Errors match them with errors.Is.
var (
	ErrStalled = errStalled
	ErrTooSlow = errTooSlow
)

// WatchTransport returns a transport that sends requests with next and
// gives every response's body the time bounds a Fetcher's downloads have
// (Policy.StallTimeout, Policy.SpeedLimit over Policy.SpeedTime): when
// the body stalls or trickles, the request is cancelled and the read that
// was waiting fails with an error naming the URL and the limit, which
// matches ErrStalled or ErrTooSlow and says Timeout() (so that a client
// that retries timeouts retries it). It is for clients whose requests a
// Fetcher does not send: the S3 SDK's, oras's. The connect and header
// timeouts are the transport's own (NewTransport).
func WatchTransport(next http.RoundTripper, p Policy) http.RoundTripper {
	return watchTransport{next: next, p: p}
}

type watchTransport struct {
	next http.RoundTripper
	p    Policy
}

func (t watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return Watch(req, t.p, t.next.RoundTrip)
}

// Watch sends req with do and returns the response with its body watched
// as WatchTransport says.
func Watch(req *http.Request, p Policy, do func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	if p.StallTimeout <= 0 && (p.SpeedLimit <= 0 || p.SpeedTime <= 0) {
		return do(req)
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	resp, err := do(req.WithContext(ctx))
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		cancel(nil)
		return resp, err
	}
	b := &watchedBody{rc: resp.Body, ctx: ctx, cancel: cancel, url: Redact(req.URL), p: p}
	b.dog = newWatchdog(resp.Body, cancel, p)
	resp.Body = b
	return resp, nil
}

// watchedBody is a response body under a watchdog. Reaching its end or
// closing it ends the watch and releases the request's context.
type watchedBody struct {
	rc     io.ReadCloser
	dog    *watchdog
	ctx    context.Context
	cancel context.CancelCauseFunc
	url    string
	p      Policy

	once sync.Once
}

// Read reads the body. Once the watch has cancelled the request, every
// read fails, even one that seems to end the body well: a server may end
// a chunked body cleanly because the client hung up.
func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.dog.Read(p)
	if err == nil {
		return n, nil
	}
	if cause := context.Cause(b.ctx); errors.Is(cause, errStalled) || errors.Is(cause, errTooSlow) {
		return n, &watchError{url: b.url, cause: cause, stall: b.p.StallTimeout}
	}
	if errors.Is(err, io.EOF) {
		b.end()
	}
	return n, err
}

func (b *watchedBody) Close() error {
	err := b.rc.Close()
	b.end()
	return err
}

// end stops the watch; a stall or slowness found before stays the cause.
func (b *watchedBody) end() {
	b.once.Do(func() {
		b.dog.stop()
		b.cancel(nil)
	})
}

// watchError is the failure of a watched body.
type watchError struct {
	url   string
	cause error
	stall interface{ String() string }
}

func (e *watchError) Error() string {
	if errors.Is(e.cause, errStalled) {
		return fmt.Sprintf("read %s: no data for %s (the stall timeout)", e.url, e.stall)
	}
	return fmt.Sprintf("read %s: %v", e.url, e.cause)
}

func (e *watchError) Unwrap() error { return e.cause }

// Timeout reports that the read timed out: clients retry it as they
// retry other timeouts.
func (e *watchError) Timeout() bool { return true }

// Temporary says the same, for clients that still ask it.
func (e *watchError) Temporary() bool { return true }

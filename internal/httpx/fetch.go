package httpx

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Sink receives a download. Reset discards everything written so far, so
// that a retry starts from scratch; mirror.Sink has the same methods.
type Sink interface {
	io.Writer
	Reset() error
}

// Fetcher sends GET requests and retries the failures that may go away:
// connection errors (refused, reset, dropped mid-body), timeouts, a body
// shorter than announced or one that stalls, 429 and 5xx responses other
// than 501. It does not retry other statuses, certificate errors, unknown
// hosts, redirect loops or caps, documents over their size limit, failures
// of the destination, or a cancelled context.
//
// Retries wait as the Policy says; a 429 or 503 response with a
// Retry-After header waits what the header asks instead (up to
// MaxRetryAfter; asking for more ends the retries). No wait outlasts the
// context.
//
// Every error names the requested URL without credentials and, after more
// than one attempt, how many were made; it is a *RequestError, and a
// *StatusError inside it is reachable with errors.As.
type Fetcher struct {
	Client *http.Client // nil means http.DefaultClient
	Policy Policy

	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// NewFetcher returns a fetcher that sends requests with c as p says.
func NewFetcher(c *http.Client, p Policy) *Fetcher {
	return &Fetcher{Client: c, Policy: p}
}

// RequestError is the final failure of a Fetcher request.
type RequestError struct {
	URL      string // the requested URL, credentials redacted
	Attempts int    // how many requests were sent (or tried)
	Err      error  // the last attempt's failure; its message names URL
	Stopped  error  // the context's error, when it ended the retries
}

func (e *RequestError) Error() string {
	msg := e.Err.Error()
	var notes []string
	if e.Attempts > 1 {
		notes = append(notes, fmt.Sprintf("after %d attempts", e.Attempts))
	}
	if e.Stopped != nil {
		notes = append(notes, "stopped: "+e.Stopped.Error())
	}
	switch len(notes) {
	case 1:
		msg += " (" + notes[0] + ")"
	case 2:
		msg += " (" + notes[0] + "; " + notes[1] + ")"
	}
	return msg
}

// Unwrap returns the last failure and the context's error, if any.
func (e *RequestError) Unwrap() []error {
	if e.Stopped == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Stopped}
}

// ResumableSink is a Sink that can continue a download: Written is how
// many bytes of the body it already holds (from an earlier attempt or an
// earlier run).
type ResumableSink interface {
	Sink
	Written() int64
}

// Fetch streams the body at u to sink. Before each retry it calls
// sink.Reset, so sink never holds bytes of a failed attempt, and a
// success means sink holds the whole body exactly once.
//
// A ResumableSink is not reset: each attempt asks for the rest of the body
// with a Range request and appends a 206 answer whose Content-Range starts
// where the sink ends. A server that ignores the range (200) or refuses
// it (416) gets the sink reset and the whole body.
func (f *Fetcher) Fetch(ctx context.Context, u *url.URL, header http.Header, sink Sink) error {
	rs, ok := sink.(ResumableSink)
	if !ok {
		return f.run(ctx, u, func() http.Header { return header }, sink.Reset, func(resp *http.Response, body io.Reader) error {
			return copyBody(u, resp, body, sink)
		})
	}
	headers := func() http.Header {
		if rs.Written() == 0 {
			return header
		}
		h := header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set("Range", fmt.Sprintf("bytes=%d-", rs.Written()))
		return h
	}
	return f.runRestartable(ctx, u, headers, nil, rs.Reset, func(resp *http.Response, body io.Reader) error {
		if resp.StatusCode == http.StatusPartialContent {
			if err := checkContentRange(resp, rs.Written()); err != nil {
				if rerr := rs.Reset(); rerr != nil {
					return &finalError{rerr}
				}
				return fmt.Errorf("resume %s: %w", redact(u), err)
			}
		} else if rs.Written() > 0 {
			if err := rs.Reset(); err != nil {
				return &finalError{fmt.Errorf("restart %s: %w", redact(u), err)}
			}
		}
		return copyBody(u, resp, body, sink)
	})
}

// checkContentRange requires a 206 answer to continue exactly at offset.
func checkContentRange(resp *http.Response, offset int64) error {
	var start, end int64
	var total string
	if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%s", &start, &end, &total); err != nil {
		return fmt.Errorf("unusable Content-Range %q", resp.Header.Get("Content-Range"))
	}
	if start != offset {
		return fmt.Errorf("asked to resume at byte %d, the server sent from byte %d", offset, start)
	}
	return nil
}

// Document reads a small document such as JSON: the body, the URL it came
// from after redirects, and its media type (lower case, without
// parameters; "" when missing or malformed). A body of more than limit
// bytes is an error, not retried; reading stops after limit+1 bytes.
func (f *Fetcher) Document(ctx context.Context, u *url.URL, header http.Header, limit int64) ([]byte, *url.URL, string, error) {
	var (
		data  []byte
		final *url.URL
		mt    string
	)
	err := f.run(ctx, u, func() http.Header { return header }, nil, func(resp *http.Response, body io.Reader) error {
		if resp.ContentLength > limit {
			return &finalError{fmt.Errorf("%s: response of %d bytes exceeds the limit of %d", redact(u), resp.ContentLength, limit)}
		}
		b, err := io.ReadAll(io.LimitReader(body, limit+1))
		if err != nil {
			return fmt.Errorf("read %s: %w", redact(u), err)
		}
		if int64(len(b)) > limit {
			return &finalError{fmt.Errorf("%s: response exceeds the limit of %d bytes", redact(u), limit)}
		}
		if resp.ContentLength >= 0 && int64(len(b)) != resp.ContentLength {
			return fmt.Errorf("read %s: got %d bytes, expected %d", redact(u), len(b), resp.ContentLength)
		}
		data, final, mt = b, resp.Request.URL, MediaType(resp)
		return nil
	})
	if err != nil {
		return nil, nil, "", err
	}
	return data, final, mt, nil
}

// consumeFunc reads a 200 response's body (guarded against stalls). Its
// errors are retried unless wrapped in a *finalError.
type consumeFunc func(resp *http.Response, body io.Reader) error

// finalError marks a failure that another attempt would not fix.
type finalError struct{ err error }

func (e *finalError) Error() string { return e.err.Error() }
func (e *finalError) Unwrap() error { return e.err }

// outcome is the result of one attempt.
type outcome struct {
	err           error
	retry         bool
	restart       bool // the partial body must be discarded before the retry
	retryAfter    time.Duration
	hasRetryAfter bool
}

// run makes attempts until one succeeds, one fails for good, the retries
// are spent or ctx ends. reset, if set, runs before each retry.
func (f *Fetcher) run(ctx context.Context, u *url.URL, headers func() http.Header, reset func() error, consume consumeFunc) error {
	return f.runRestartable(ctx, u, headers, reset, nil, consume)
}

// runRestartable is run with restart, called before a retry when an
// attempt found the partial body unusable (a resumed download refused).
func (f *Fetcher) runRestartable(ctx context.Context, u *url.URL, headers func() http.Header, reset, restart func() error, consume consumeFunc) error {
	if u.Scheme != "https" && u.Scheme != "http" {
		return &RequestError{URL: redact(u), Attempts: 1, Err: fmt.Errorf("request %s: unsupported URL scheme %q", redact(u), u.Scheme)}
	}
	retries := max(f.Policy.Retries, 0)
	for attempt := 1; ; attempt++ {
		o := f.attempt(ctx, u, headers(), consume)
		if o.err == nil {
			return nil
		}
		fail := &RequestError{URL: redact(u), Attempts: attempt, Err: o.err}
		if err := ctx.Err(); err != nil {
			if !errors.Is(o.err, err) {
				fail.Stopped = err
			}
			return fail
		}
		if !o.retry || attempt > retries {
			return fail
		}
		wait := f.Policy.backoff(attempt)
		if o.hasRetryAfter {
			if o.retryAfter > MaxRetryAfter {
				fail.Err = fmt.Errorf("%w; the server asks to wait %s before retrying, longer than the %s tfmirror waits", o.err, o.retryAfter, MaxRetryAfter)
				return fail
			}
			wait = o.retryAfter
		}
		discard := reset
		if discard == nil && o.restart {
			discard = restart
		}
		if discard != nil {
			if err := discard(); err != nil {
				fail.Err = fmt.Errorf("%w; then discarding the partial download failed: %w", o.err, err)
				return fail
			}
		}
		sleep := f.sleep
		if sleep == nil {
			sleep = sleepContext
		}
		if err := sleep(ctx, wait); err != nil {
			fail.Stopped = err
			return fail
		}
	}
}

// errStalled cancels an attempt whose body stopped delivering bytes.
var errStalled = errors.New("stalled")

// attempt sends one request and hands a 200 response to consume.
func (f *Fetcher) attempt(ctx context.Context, u *url.URL, header http.Header, consume consumeFunc) outcome {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(actx, http.MethodGet, u.String(), nil)
	if err != nil {
		return outcome{err: fmt.Errorf("request %s: %w", redact(u), unwrapURLError(err))}
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	c := f.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		if resp != nil {
			// Only a failed CheckRedirect returns both (with the body
			// closed): a redirect loop or cap, which retrying cannot fix.
			resp.Body.Close()
			return outcome{err: fmt.Errorf("request %s: %w", redact(u), unwrapURLError(err))}
		}
		err = unwrapURLError(err)
		return outcome{err: fmt.Errorf("request %s: %w", redact(u), err), retry: transient(err)}
	}
	defer resp.Body.Close()
	ranged := req.Header.Get("Range") != ""
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && ranged {
		// Consume restarts from scratch on a plain 200; ask for one.
		return outcome{err: fmt.Errorf("%s refused to resume (416)", redact(u)), retry: true, restart: true}
	}
	resumed := resp.StatusCode == http.StatusPartialContent && ranged
	if resp.StatusCode != http.StatusOK && !resumed {
		o := outcome{
			err:   &StatusError{URL: redact(u), StatusCode: resp.StatusCode, Status: resp.Status},
			retry: retryableStatus(resp.StatusCode),
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			o.retryAfter, o.hasRetryAfter = retryAfter(resp.Header, time.Now())
		}
		return o
	}
	var body io.Reader = resp.Body
	var timer *time.Timer
	if d := f.Policy.StallTimeout; d > 0 {
		timer = time.AfterFunc(d, func() { cancel(errStalled) })
		body = &stallReader{r: resp.Body, timer: timer, d: d}
	}
	err = consume(resp, body)
	// Once the attempt is cancelled (stalled, or ctx is done), it failed
	// even if the body then seemed to end well: a server may end a chunked
	// response cleanly because the client hung up.
	stalled := timer != nil && !timer.Stop()
	var fe *finalError
	switch {
	case errors.As(err, &fe):
		return outcome{err: fe.err}
	case ctx.Err() != nil:
		return outcome{err: fmt.Errorf("read %s: %w", redact(u), ctx.Err())}
	case stalled:
		return outcome{err: fmt.Errorf("read %s: no data for %s", redact(u), f.Policy.StallTimeout), retry: true}
	case err != nil:
		return outcome{err: err, retry: true}
	}
	return outcome{}
}

// copyBody streams body to w and checks that as many bytes arrived as the
// server announced. Failures of w are final; failures of body are not.
func copyBody(u *url.URL, resp *http.Response, body io.Reader, w io.Writer) error {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		m, rerr := body.Read(buf)
		if m > 0 {
			k, werr := w.Write(buf[:m])
			n += int64(k)
			if werr == nil && k < m {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return &finalError{fmt.Errorf("copy %s: %w", redact(u), werr)}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("read %s: %w", redact(u), rerr)
		}
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("read %s: got %d bytes, expected %d", redact(u), n, resp.ContentLength)
	}
	return nil
}

// stallReader restarts the stall timer whenever bytes arrive.
type stallReader struct {
	r     io.Reader
	timer *time.Timer
	d     time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.d)
	}
	return n, err
}

// retryableStatus reports whether a status may go away: 429 and 5xx except
// 501 Not Implemented.
func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || (code >= 500 && code <= 599 && code != http.StatusNotImplemented)
}

// transient reports whether a transport error may go away. Connection
// errors and timeouts may; certificate problems, a host name that does not
// exist and a server that does not speak TLS will not.
func transient(err error) bool {
	var (
		verifyErr   *tls.CertificateVerificationError
		unknownCA   x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidCert x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
		dnsErr      *net.DNSError
	)
	switch {
	case errors.As(err, &verifyErr), errors.As(err, &unknownCA), errors.As(err, &hostErr),
		errors.As(err, &invalidCert), errors.As(err, &recordErr):
		return false
	case errors.As(err, &dnsErr):
		return !dnsErr.IsNotFound
	}
	return true
}

// sleepContext waits d, or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// redact returns u as text without credentials: a password becomes
// "xxxxx" as in url.URL.Redacted, and so does a user name without a
// password, which is often a token.
func redact(u *url.URL) string {
	if u.User != nil {
		if _, ok := u.User.Password(); !ok {
			c := *u
			c.User = url.User("xxxxx")
			return c.String()
		}
	}
	return u.Redacted()
}

package httpx

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/tfmirror/tfmirror/internal/chunkio"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/syncx"
)

// Sink receives a download. Reset discards everything written so far, so
// that a retry starts from scratch. It has mirror.Sink's methods, so a
// mirror.Sink is a Sink as it is: httpx declares its own rather than
// import the build's core, which the packages that use httpx and know
// nothing of mirrors (module fetching, OCI) would then import too.
type Sink interface {
	io.Writer
	Reset() error
}

// Fetcher sends GET requests and retries the failures that may go away:
// connection errors (refused, reset, dropped mid-body), timeouts, a body
// shorter than announced, one that stalls or one slower than the Policy's
// speed limit, 429 and 5xx responses other than 501. It does not retry
// other statuses, certificate errors, unknown hosts, redirect loops or
// caps, bodies over their size limit, failures of the destination, or a
// cancelled context.
//
// Retries wait as the Policy says; a 429 or 503 response with a
// Retry-After header waits what the header asks instead (up to
// MaxRetryAfter; asking for more ends the retries). No wait outlasts the
// context.
//
// Every error names the requested URL as Redact shows it and, after more
// than one attempt, how many were made; it is a *RequestError, and a
// *StatusError inside it is reachable with errors.As.
//
// With Hosts, it learns about hosts across the run: a host written off
// there (too slow or stalled again and again) gets no more attempts, and
// requests to it fail at once with a *HostError naming it.
type Fetcher struct {
	Client *http.Client // nil means http.DefaultClient
	Policy Policy
	// Hosts, if set, is the run's record of slow hosts, shared by every
	// Fetcher of the run.
	Hosts *Hosts

	// httpsOnly refuses plain http requests and redirects (HTTPSOnly).
	httpsOnly bool
	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// NewFetcher returns a fetcher that sends requests with c as p says.
func NewFetcher(c *http.Client, p Policy) *Fetcher {
	return &Fetcher{Client: c, Policy: p}
}

// HTTPSOnly returns a copy of f that refuses, without sending anything,
// a request for a URL that is not https, and follows redirects only to
// https URLs (HTTPSOnlyClient), for requests that carry credentials.
func (f *Fetcher) HTTPSOnly() *Fetcher {
	c := *f
	c.Client, c.httpsOnly = HTTPSOnlyClient(f.Client), true
	return &c
}

// ErrTooLarge means a body was longer than its limit: a document's, the
// Policy's MaxBodyBytes or a LimitedSink's. Errors match it with
// errors.Is; their messages say which limit. It is the transport's own:
// a caller that hands downloads to package mirror restates it as
// mirror.ErrTooLarge.
var ErrTooLarge = errors.New("response body too large")

// tooLargeError is an ErrTooLarge with its own message.
type tooLargeError struct{ msg string }

func (e *tooLargeError) Error() string        { return e.msg }
func (e *tooLargeError) Is(target error) bool { return target == ErrTooLarge }

// tooLarge is a final ErrTooLarge failure.
func tooLarge(format string, args ...any) error {
	return &finalError{&tooLargeError{fmt.Sprintf(format, args...)}}
}

// LimitedSink is a Sink that takes at most Limit bytes (when Limit is
// more than 0), say the size an origin announced for a download: Fetch
// treats it as a cap, as it does the Policy's MaxBodyBytes.
type LimitedSink interface {
	Sink
	Limit() int64
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
//
// A body longer than the Policy's MaxBodyBytes, or than a LimitedSink's
// Limit, fails with ErrTooLarge, without a retry and without a byte past
// the limit written to sink.
func (f *Fetcher) Fetch(ctx context.Context, u *url.URL, header http.Header, sink Sink) error {
	limit := f.bodyLimit(sink)
	rs, ok := sink.(ResumableSink)
	if !ok {
		return f.run(ctx, u, func() http.Header { return header }, sink.Reset, func(resp *http.Response, body io.Reader) error {
			return copyBody(u, resp, body, sink, 0, limit)
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
				return fmt.Errorf("resume %s: %w", Redact(u), err)
			}
		} else if rs.Written() > 0 {
			if err := rs.Reset(); err != nil {
				return &finalError{fmt.Errorf("restart %s: %w", Redact(u), err)}
			}
		}
		return copyBody(u, resp, body, sink, rs.Written(), limit)
	})
}

// bodyLimit is the most Fetch takes into sink: the smaller of the Policy's
// MaxBodyBytes and the sink's own Limit; 0 means no limit.
func (f *Fetcher) bodyLimit(sink Sink) int64 {
	limit := f.Policy.MaxBodyBytes
	if ls, ok := sink.(LimitedSink); ok && ls.Limit() > 0 && (limit <= 0 || ls.Limit() < limit) {
		limit = ls.Limit()
	}
	return max(limit, 0)
}

// checkContentRange requires a 206 answer to continue exactly at offset.
func checkContentRange(resp *http.Response, offset int64) error {
	var start, end int64
	var total string
	if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%s", &start, &end, &total); err != nil {
		return fmt.Errorf("unusable Content-Range %s", excerpt.Quote(resp.Header.Get("Content-Range")))
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
			return tooLarge("%s: response of %d bytes exceeds the limit of %d", Redact(u), resp.ContentLength, limit)
		}
		b, err := io.ReadAll(io.LimitReader(body, limit+1))
		if err != nil {
			return fmt.Errorf("read %s: %w", Redact(u), err)
		}
		if int64(len(b)) > limit {
			return tooLarge("%s: response exceeds the limit of %d bytes", Redact(u), limit)
		}
		if resp.ContentLength >= 0 && int64(len(b)) != resp.ContentLength {
			return fmt.Errorf("read %s: got %d bytes, expected %d", Redact(u), len(b), resp.ContentLength)
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
	from          *url.URL // where the answer came from, after redirects; nil without one
}

// run makes attempts until one succeeds, one fails for good, the retries
// are spent or ctx ends. reset, if set, runs before each retry.
func (f *Fetcher) run(ctx context.Context, u *url.URL, headers func() http.Header, reset func() error, consume consumeFunc) error {
	return f.runRestartable(ctx, u, headers, reset, nil, consume)
}

// runRestartable is run with restart, called before a retry when an
// attempt found the partial body unusable (a resumed download refused).
func (f *Fetcher) runRestartable(ctx context.Context, u *url.URL, headers func() http.Header, reset, restart func() error, consume consumeFunc) error {
	if err := f.checkScheme(u); err != nil {
		return &RequestError{URL: Redact(u), Attempts: 1, Err: err}
	}
	retries := max(f.Policy.Retries, 0)
	for attempt := 1; ; attempt++ {
		if err := f.Hosts.check(u); err != nil {
			return &RequestError{URL: Redact(u), Attempts: attempt - 1, Err: fmt.Errorf("request %s: %w", Redact(u), err)}
		}
		o := f.attempt(ctx, u, headers(), consume)
		if o.err == nil {
			return nil
		}
		fail := &RequestError{URL: Redact(u), Attempts: attempt, Err: o.err}
		if err := ctx.Err(); err != nil {
			if !errors.Is(o.err, err) {
				fail.Stopped = err
			}
			return fail
		}
		if !o.retry || attempt > retries {
			return fail
		}
		if err := f.Hosts.check(o.from); err != nil {
			// No wait for a retry that would not be made.
			fail.Err = fmt.Errorf("%w; no retry: %w", o.err, err)
			return fail
		}
		wait := f.Policy.Backoff(attempt)
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
			sleep = syncx.Sleep
		}
		notify.Retry(ctx, Redact(u), attempt+1, wait, o.err)
		if err := sleep(ctx, wait); err != nil {
			fail.Stopped = err
			return fail
		}
	}
}

// checkScheme refuses URLs the fetcher does not request: other schemes
// than http and https, and http for an HTTPSOnly fetcher.
func (f *Fetcher) checkScheme(u *url.URL) error {
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("request %s: unsupported URL scheme %q", Redact(u), u.Scheme)
	case f.httpsOnly && u.Scheme != "https":
		return fmt.Errorf("request %s: refused: this request carries credentials and is made only over https", Redact(u))
	}
	return nil
}

// attempt sends one request and hands a 200 response (or the 206 answer
// to a Range request) to consume, through a watchdog.
func (f *Fetcher) attempt(ctx context.Context, u *url.URL, header http.Header, consume consumeFunc) outcome {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	resp, o := f.send(actx, u, header)
	if resp == nil {
		return o
	}
	defer resp.Body.Close()
	from := resp.Request.URL
	if err := f.Hosts.check(from); err != nil {
		// A redirect led to a host written off.
		return outcome{err: fmt.Errorf("request %s: %w", Redact(u), err), from: from}
	}
	if o, done := answerStatus(u, resp); done {
		o.from = from
		return o
	}
	dog := f.watch(resp.Body, cancel)
	err := consume(resp, dog)
	dog.stop()
	o = f.verdict(ctx, actx, u, err)
	o.from = from
	switch cause := context.Cause(actx); {
	case o.err == nil:
		f.Hosts.done(from)
	case o.retry && errors.Is(cause, errStalled):
		f.Hosts.slow(from, fmt.Errorf("stalled: no data for %s", f.Policy.StallTimeout))
	case o.retry && errors.Is(cause, errTooSlow):
		f.Hosts.slow(from, cause)
	}
	return o
}

// send makes the request; without a response, the outcome says why.
func (f *Fetcher) send(ctx context.Context, u *url.URL, header http.Header) (*http.Response, outcome) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, outcome{err: fmt.Errorf("request %s: %w", Redact(u), UnwrapURLError(err))}
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	c := f.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err == nil {
		return resp, outcome{}
	}
	if resp != nil {
		// Only a failed CheckRedirect returns both (with the body closed):
		// a redirect loop or cap, or a refused redirect, which retrying
		// cannot fix.
		resp.Body.Close()
		return nil, outcome{err: fmt.Errorf("request %s: %w", Redact(u), UnwrapURLError(err))}
	}
	err = UnwrapURLError(err)
	return nil, outcome{err: fmt.Errorf("request %s: %w", Redact(u), err), retry: transient(err)}
}

// answerStatus is the outcome of a response whose status has no body to
// consume; done is false for 200, and for 206 to a Range request.
func answerStatus(u *url.URL, resp *http.Response) (outcome, bool) {
	ranged := resp.Request.Header.Get("Range") != ""
	switch {
	case resp.StatusCode == http.StatusOK, resp.StatusCode == http.StatusPartialContent && ranged:
		return outcome{}, false
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && ranged:
		// Consume restarts from scratch on a plain 200; ask for one.
		return outcome{err: fmt.Errorf("%s refused to resume (416)", Redact(u)), retry: true, restart: true}, true
	}
	o := outcome{
		err:   &StatusError{URL: Redact(u), StatusCode: resp.StatusCode, Status: excerpt.Text(resp.Status, 0), OverTLS: resp.TLS != nil},
		retry: retryableStatus(resp.StatusCode),
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		o.retryAfter, o.hasRetryAfter = RetryAfter(resp.Header, time.Now())
	}
	return o, true
}

// verdict is the outcome of consuming a body with error err. Once the
// attempt is cancelled (stalled, too slow, or ctx is done), it failed even
// if the body then seemed to end well: a server may end a chunked response
// cleanly because the client hung up.
func (f *Fetcher) verdict(ctx, actx context.Context, u *url.URL, err error) outcome {
	var fe *finalError
	switch cause := context.Cause(actx); {
	case errors.As(err, &fe):
		return outcome{err: fe.err}
	case ctx.Err() != nil:
		return outcome{err: fmt.Errorf("read %s: %w", Redact(u), ctx.Err())}
	case errors.Is(cause, errStalled):
		return outcome{err: fmt.Errorf("read %s: no data for %s", Redact(u), f.Policy.StallTimeout), retry: true}
	case errors.Is(cause, errTooSlow):
		return outcome{err: fmt.Errorf("read %s: %w", Redact(u), cause), retry: true}
	case err != nil:
		return outcome{err: err, retry: true}
	}
	return outcome{}
}

// SizedSink is a Sink told the whole size of what it receives, when the
// response announces it (Content-Length, plus what a resumed download
// already holds), before the first byte.
type SizedSink interface {
	Sink
	Expect(size int64)
}

// copyBody copies a 200 or 206 answer's body to w, in chunks
// (chunkio.Copy), and checks its length: w's offset bytes are already
// there, and with a limit no byte past it reaches w. A failed write is
// final; a failed read may be retried.
func copyBody(u *url.URL, resp *http.Response, body io.Reader, w io.Writer, offset, limit int64) error {
	body, err := notAPage(u, resp, body, offset)
	if err != nil {
		return err
	}
	if limit > 0 && resp.ContentLength >= 0 && offset+resp.ContentLength > limit {
		return tooLarge("read %s: the body of %d bytes exceeds the limit of %d", Redact(u), offset+resp.ContentLength, limit)
	}
	if s, ok := w.(SizedSink); ok && resp.ContentLength >= 0 {
		s.Expect(offset + resp.ContentLength)
	}
	left := int64(chunkio.NoLimit)
	if limit > 0 {
		left = max(limit-offset, 0)
	}
	n, err := chunkio.CopyLimited(w, body, left)
	switch {
	case chunkio.IsWrite(err):
		return &finalError{fmt.Errorf("copy %s: %w", Redact(u), err)}
	case errors.Is(err, chunkio.ErrPastLimit):
		return tooLarge("read %s: the body exceeds the limit of %d bytes", Redact(u), limit)
	case err != nil:
		return fmt.Errorf("read %s: %w", Redact(u), err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("read %s: got %d bytes, expected %d", Redact(u), n, resp.ContentLength)
	}
	return nil
}

// notAPage refuses a file whose answer is an HTML page (a login page, a
// proxy's or a captive portal's), not the file: served as text/html and
// starting with "<", which neither an archive nor a checksum file does.
// It is a network failure, not a file that fails its checks. The bytes
// it looked at stay in the body returned.
func notAPage(u *url.URL, resp *http.Response, body io.Reader, offset int64) (io.Reader, error) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if offset > 0 || mt != "text/html" {
		return body, nil
	}
	head := make([]byte, 512)
	n, err := io.ReadAtLeast(body, head, 1)
	head = head[:max(n, 0)]
	if trimmed := bytes.TrimLeft(head, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '<' {
		return nil, &finalError{fmt.Errorf("%s returned an HTML page instead of the file (a login page or proxy error?)", Redact(u))}
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("read %s: %w", Redact(u), err)
	}
	return io.MultiReader(bytes.NewReader(head), body), nil
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

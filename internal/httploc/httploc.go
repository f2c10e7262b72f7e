// Package httploc is a file at an http or https URL as a package
// location (mirror.Location): an archive, a SHA256SUMS or its signature
// that a registry's download document or a network mirror's version
// document names. It owns fetching one with an httpx.Fetcher (its retries,
// time limits and size limits, a body over a limit wrapping
// mirror.ErrTooLarge), showing its URL only redacted, and telling its size
// and transport; nothing else. A location a server named (NamedBy) is
// fetched under httpx.WithLocation, so its redirects are held to the
// location rule and it is presented no client certificate the rule does
// not give it; whether the URL itself may be fetched is checked by whoever
// read it from the server's document (httpx.Locations.Check).
package httploc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/mirror"
)

// Location is a file a document names: an archive, a
// SHA256SUMS or its signature, at an http or https URL that may be
// presigned. It is fetched with the client's fetcher and, like OpenTofu
// does, anonymously: no credentials are sent. It shows its URL only as
// httpx.Redact does, in String and in its errors.
type Location struct {
	fetch *httpx.Fetcher
	url   *url.URL
	// named: by and rule are the server that named the URL and the
	// location rule it is held to.
	named bool
	by    httpx.Namer
	rule  httpx.Locations
}

// New returns the file at u, fetched with f.
func New(f *httpx.Fetcher, u *url.URL) Location { return Location{fetch: f, url: u} }

// NamedBy returns l as a location by names, fetched under rule
// (httpx.WithLocation).
func (l Location) NamedBy(rule httpx.Locations, by httpx.Namer) Location {
	l.named, l.by, l.rule = true, by, rule
	return l
}

// context is ctx for a request of l.
func (l Location) context(ctx context.Context) context.Context {
	if !l.named {
		return ctx
	}
	return httpx.WithLocation(ctx, l.rule, l.by)
}

// URL returns the file's URL, unredacted: never print it.
func (l Location) URL() *url.URL { return l.url }

var (
	_ mirror.Location  = Location{}
	_ mirror.Sizer     = Location{}
	_ mirror.Transport = Location{}
)

// Fetch copies the file to sink, retrying a failed transfer from scratch
// (sink.Reset) as the fetcher's policy says. A body over the policy's
// MaxBodyBytes or the sink's Limit is an error wrapping
// mirror.ErrTooLarge.
func (l Location) Fetch(ctx context.Context, sink mirror.Sink) error {
	err := l.fetch.Fetch(l.context(ctx), l.url, nil, sink)
	if errors.Is(err, httpx.ErrTooLarge) {
		return tooLargeError{err}
	}
	return err
}

// tooLargeError is httpx's ErrTooLarge as mirror knows it.
type tooLargeError struct{ err error }

func (e tooLargeError) Error() string        { return e.err.Error() }
func (e tooLargeError) Unwrap() error        { return e.err }
func (e tooLargeError) Is(target error) bool { return target == mirror.ErrTooLarge }

// String is the URL as httpx.Redact shows it.
func (l Location) String() string { return httpx.Redact(l.url) }

// Insecure reports whether the file comes over plain http.
func (l Location) Insecure() bool { return l.url.Scheme == "http" }

// Origin is the URL's scheme and host.
func (l Location) Origin() string { return l.url.Scheme + "://" + l.url.Host }

// Size asks for the file's size with a HEAD request, without
// credentials, as downloads are made.
func (l Location) Size(ctx context.Context) (int64, error) {
	req, err := http.NewRequestWithContext(l.context(ctx), http.MethodHead, l.url.String(), nil)
	if err != nil {
		return 0, fmt.Errorf("HEAD %s: %w", httpx.Redact(l.url), httpx.UnwrapURLError(err))
	}
	client := l.fetch.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("HEAD %s: %w", httpx.Redact(l.url), httpx.UnwrapURLError(err))
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength < 0 {
		return 0, fmt.Errorf("HEAD %s: %s, length %d", httpx.Redact(l.url), excerpt.Text(resp.Status, 0), resp.ContentLength)
	}
	return resp.ContentLength, nil
}

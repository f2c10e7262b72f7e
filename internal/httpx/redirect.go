package httpx

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// HTTPSOnlyClient returns a copy of c (nil means http.DefaultClient) that
// follows a redirect only to an https URL; then c's own redirect policy
// applies (without one, at most MaxRedirects). Like every client this
// package makes, it never carries credentials to another origin. Requests
// that carry a registry token (API calls, service discovery) are made with
// it, so the token never travels in cleartext.
func HTTPSOnlyClient(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	guarded := *c
	next := c.CheckRedirect
	guarded.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		dropCredentials(req, via)
		if req.URL.Scheme != "https" {
			return fmt.Errorf("refused the redirect from %s to %s: only https is allowed here", Redact(via[len(via)-1].URL), Redact(req.URL))
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= MaxRedirects {
			return fmt.Errorf("stopped after %d redirects", MaxRedirects)
		}
		return nil
	}
	return &guarded
}

// dropCredentials removes the Authorization and Cookie headers from a
// redirect once the chain has left the first request's origin (scheme,
// host and port). Go's own rule keeps them for a subdomain, another port
// or plain http on the same host name.
func dropCredentials(req *http.Request, via []*http.Request) {
	first := via[0].URL
	left := !sameOrigin(first, req.URL)
	for _, hop := range via[1:] {
		left = left || !sameOrigin(first, hop.URL)
	}
	if left {
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port
// (as written: an explicit default port counts as another origin).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

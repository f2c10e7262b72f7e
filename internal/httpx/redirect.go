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
		DropCredentials(req, via)
		if req.URL.Scheme != "https" {
			return fmt.Errorf("refused the redirect from %s to %s: only https is allowed here", Redact(via[len(via)-1].URL), Redact(req.URL))
		}
		if err := CheckRedirectLocation(req); err != nil {
			return err
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

// DropCredentials removes the Authorization and Cookie headers from a
// redirect once the chain has left the first request's origin (scheme,
// host and port, a missing port being the scheme's). Go's own rule keeps
// them for a subdomain, another port or plain http on the same host name.
// Every redirect policy of tfmirror's clients calls it, so no credential
// reaches a host it was not meant for (registries send blob downloads to
// S3 or a CDN).
func DropCredentials(req *http.Request, via []*http.Request) {
	first := via[0].URL
	for _, hop := range append(via[1:], req) {
		if !sameOrigin(first, hop.URL) {
			req.Header.Del("Authorization")
			req.Header.Del("Cookie")
			return
		}
	}
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && canonicalHost(a) == canonicalHost(b)
}

// canonicalHost is host:port with the scheme's default port made explicit.
func canonicalHost(u *url.URL) string {
	return strings.ToLower(u.Hostname()) + ":" + portOf(u)
}

// portOf is u's port, the scheme's default when it has none.
func portOf(u *url.URL) string {
	if port := u.Port(); port != "" {
		return port
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

package httpx

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// MaxRedirects caps how many redirects one request may follow.
const MaxRedirects = 10

// Environment is what a transport takes from the process environment.
// The CLI fills it in, so library code never reads the environment itself.
type Environment struct {
	// CAFile, if set, replaces the system certificate store with the PEM
	// certificates it holds, as SSL_CERT_FILE does.
	CAFile string
	// Proxy settings, with the meaning of HTTP_PROXY, HTTPS_PROXY and
	// NO_PROXY. As in Go's standard library, requests to localhost and
	// loopback addresses never use a proxy.
	HTTPProxy, HTTPSProxy, NoProxy string
	// ClientCertificates are presented for mutual TLS, each only to its
	// host (a lowercase host name, without port): see PerHost.
	ClientCertificates map[string]tls.Certificate
}

// NewRoundTripper is NewTransport with env's client certificates
// presented to their hosts (PerHost).
func NewRoundTripper(env Environment, p Policy) (http.RoundTripper, error) {
	t, err := NewTransport(env, p)
	if err != nil {
		return nil, err
	}
	return PerHost(t, env.ClientCertificates), nil
}

// NewTransport returns a transport that uses env's proxies and certificate
// store (the system store unless env.CAFile is set), and p's connect and
// header timeouts: p.ConnectTimeout bounds the TCP connection and the TLS
// handshake, p.HeaderTimeout the wait for response headers.
func NewTransport(env Environment, p Policy) (*http.Transport, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	proxy := (&httpproxy.Config{HTTPProxy: env.HTTPProxy, HTTPSProxy: env.HTTPSProxy, NoProxy: env.NoProxy}).ProxyFunc()
	t.Proxy = func(req *http.Request) (*url.URL, error) { return proxy(req.URL) }
	t.DialContext = (&net.Dialer{Timeout: p.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = p.ConnectTimeout
	t.ResponseHeaderTimeout = p.HeaderTimeout
	if env.CAFile == "" {
		return t, nil
	}
	pem, err := os.ReadFile(env.CAFile)
	if err != nil {
		return nil, fmt.Errorf("read CA certificates: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("read CA certificates: %s holds no PEM certificate", env.CAFile)
	}
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// NewClient returns a client over transport that sends userAgent and
// follows at most maxRedirects redirects, and none back to a URL it has
// already visited. A redirect that leaves the first request's origin
// (scheme, host or port) loses the Authorization and Cookie headers.
// A redirect of a request for a location (WithLocation) goes only where
// the location rule lets its namer send tfmirror. timeout 0 means none
// (for large downloads, which are bounded by their context and the
// Fetcher's stall and speed limits instead).
func NewClient(transport http.RoundTripper, userAgent string, maxRedirects int, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: userAgentTransport{next: transport, agent: userAgent},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			DropCredentials(req, via)
			if err := CheckRedirectLocation(req); err != nil {
				return err
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			for _, prev := range via {
				if prev.URL.String() == req.URL.String() {
					return fmt.Errorf("stopped at a redirect loop: %s redirects back to %s", Redact(via[len(via)-1].URL), Redact(req.URL))
				}
			}
			return nil
		},
	}
}

type userAgentTransport struct {
	next  http.RoundTripper
	agent string
}

func (t userAgentTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("User-Agent") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("User-Agent", t.agent)
	}
	return t.next.RoundTrip(req)
}

// StatusError is an unexpected HTTP status.
type StatusError struct {
	URL        string // redacted
	StatusCode int
	Status     string // as the server sent it, bounded and escaped (excerpt.Text)
	// OverTLS: the answer came over TLS, where a 400 is how nginx (and
	// others) refuse a request without the client certificate they require.
	OverTLS bool
}

func (e *StatusError) Error() string {
	if e.OverTLS && e.StatusCode == http.StatusBadRequest {
		return fmt.Sprintf("%s returned %s (if the server requires a client certificate, mutual TLS, add a client_certificate block for its host to the manifest)", e.URL, e.Status)
	}
	return fmt.Sprintf("%s returned %s", e.URL, e.Status)
}

// UnwrapURLError drops *url.Error's own copy of the (unredacted) URL, so
// an error can be shown with the URL redacted.
func UnwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// MediaType returns the response's media type without parameters.
func MediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

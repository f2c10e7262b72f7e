package httpx

import (
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
// already visited. timeout 0 means none (for large downloads, which are
// bounded by their context and the Fetcher's stall timeout instead).
func NewClient(transport http.RoundTripper, userAgent string, maxRedirects int, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: userAgentTransport{next: transport, agent: userAgent},
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			for _, prev := range via {
				if prev.URL.String() == req.URL.String() {
					return fmt.Errorf("stopped at a redirect loop: %s redirects back to %s", redact(via[len(via)-1].URL), redact(req.URL))
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
	Status     string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s returned %s", e.URL, e.Status)
}

// Get sends a GET request with the given headers and returns the response
// if its status is 200; otherwise it returns a *StatusError.
func Get(ctx context.Context, c *http.Client, u *url.URL, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", u.Redacted(), unwrapURLError(err))
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", u.Redacted(), unwrapURLError(err))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, &StatusError{URL: u.Redacted(), StatusCode: resp.StatusCode, Status: resp.Status}
	}
	return resp, nil
}

// unwrapURLError drops *url.Error's own copy of the (unredacted) URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ReadLimited reads the whole body, failing if it exceeds limit bytes.
func ReadLimited(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%s: response of %d bytes exceeds the limit of %d", redacted(resp), resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", redacted(resp), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: response exceeds the limit of %d bytes", redacted(resp), limit)
	}
	return data, nil
}

// Copy streams the body to w and checks that as many bytes arrived as the
// server announced.
func Copy(resp *http.Response, w io.Writer) error {
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return fmt.Errorf("read %s: %w", redacted(resp), err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("read %s: got %d bytes, expected %d", redacted(resp), n, resp.ContentLength)
	}
	return nil
}

// MediaType returns the response's media type without parameters.
func MediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

func redacted(resp *http.Response) string {
	if resp.Request != nil && resp.Request.URL != nil {
		return resp.Request.URL.Redacted()
	}
	return "response"
}

package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/opentofu/svchost/disco"
	"github.com/opentofu/svchost/svcauth"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/mirror"
)

// service is a registry protocol found by service discovery: its ID and
// what errors call it.
type service struct{ id, name string }

var (
	providerService = service{regproto.ProvidersV1, "provider registry"}
	moduleService   = service{regproto.ModulesV1, "module registry"}
)

// Document size limits: a versions list for a large provider is well under
// a few megabytes; a download document holds a few keys.
const (
	maxVersionsBytes = 16 << 20
	maxDownloadBytes = 1 << 20
)

// Config configures a Client.
type Config struct {
	// Fetcher sends registry API calls and downloads, retrying as its
	// policy says.
	Fetcher *httpx.Fetcher
	// HTTP is used, with httpx.DefaultPolicy, when Fetcher is nil.
	HTTP *http.Client
	// Discovery is used for /.well-known/terraform.json requests.
	Discovery *http.Client
	// Services overrides discovery for hosts, like a CLI-config host block:
	// service ID to URL (relative URLs resolve against the host's
	// discovery document URL).
	Services map[addrs.Hostname]map[string]string
	// Tokens are bearer tokens per registry host.
	Tokens map[addrs.Hostname]string
	// Locations is the rule the URLs of download documents are held to,
	// with the provider's registry as their namer.
	Locations httpx.Locations
}

// Client talks to provider registries. Requests that may carry a token
// (service discovery and API calls) are made over https only, and lose the
// token on a redirect to another origin; a registry that names or
// redirects to a plain http URL for them gets an error naming it.
// Archives and checksums never carry the token; they may come over plain
// http (their signature protects them) from the registry's own origin, or
// from a host the location rule allows.
type Client struct {
	fetch  *httpx.Fetcher // downloads
	api    *httpx.Fetcher // API calls: https only
	locAPI *httpx.Fetcher // api that also reads module download answers (locationFetcher)
	disco  *disco.Disco
	tokens map[addrs.Hostname]string
	locs   httpx.Locations
}

var (
	_ mirror.Source         = (*Client)(nil)
	_ mirror.PlatformLister = (*Client)(nil)
	_ mirror.WarningLister  = (*Client)(nil)
)

// New returns a client for cfg.
func New(cfg Config) *Client {
	creds := make(map[addrs.Hostname]svcauth.HostCredentials)
	for h, tok := range cfg.Tokens {
		creds[h] = svcauth.HostCredentialsToken(tok)
	}
	d := disco.New(disco.WithHTTPClient(discoveryClient(cfg.Discovery)), disco.WithCredentials(svcauth.StaticCredentialsSource(creds)))
	for host, services := range cfg.Services {
		m := make(map[string]any, len(services))
		for id, u := range services {
			m[id] = u
		}
		d.ForceHostServices(host, m)
	}
	fetch := cfg.Fetcher
	if fetch == nil {
		fetch = httpx.NewFetcher(cfg.HTTP, httpx.DefaultPolicy())
	}
	return &Client{fetch: fetch, api: fetch.HTTPSOnly(), locAPI: locationFetcher(fetch), disco: d, tokens: cfg.Tokens, locs: cfg.Locations}
}

// discoveryClient is c (nil: one like svchost's own, 11s and 3 redirects)
// made https-only: discovery requests carry the host's token.
func discoveryClient(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{Timeout: 11 * time.Second, CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) >= 3 {
				return fmt.Errorf("stopped after 3 redirects")
			}
			return nil
		}}
	}
	return httpx.HTTPSOnlyClient(c)
}

// serviceURL returns the base URL of host's provider registry, ending in
// "/". It must be https: API calls carry the host's token.
func (c *Client) serviceURL(ctx context.Context, host addrs.Hostname) (*url.URL, error) {
	return c.discover(ctx, host, providerService)
}

// discover returns the base URL of host's service s, ending in "/". It
// must be https: API calls carry the host's token.
func (c *Client) discover(ctx context.Context, host addrs.Hostname, s service) (*url.URL, error) {
	u, err := c.disco.DiscoverServiceURL(ctx, host, s.id)
	if err != nil {
		return nil, fmt.Errorf("discover %s of %s: %w", s.name, host.ForDisplay(), describeDiscoveryError(err, s))
	}
	if u == nil {
		return nil, fmt.Errorf("discover %s of %s: the host offers no services", s.name, host.ForDisplay())
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("discover %s of %s: its %s URL %s is not https; tfmirror calls registry APIs only over https", s.name, host.ForDisplay(), s.id, httpx.Redact(u))
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}

// describeDiscoveryError explains a discovery failure of service s; a
// failed request is restated with its URL redacted.
func describeDiscoveryError(err error, s service) error {
	var notProvided *disco.ErrServiceNotProvided
	var unsupported *disco.ErrVersionNotSupported
	var urlErr *url.Error
	switch {
	case errors.As(err, &urlErr):
		shown := "the discovery document"
		if u, perr := url.Parse(urlErr.URL); perr == nil {
			shown = httpx.Redact(u)
		}
		return fmt.Errorf("request %s: %w", shown, urlErr.Err)
	case errors.As(err, &notProvided):
		return &restated{msg: fmt.Sprintf("the host does not provide a %s (%s)", s.name, s.id), err: err}
	case errors.As(err, &unsupported):
		return fmt.Errorf("the host's %s speaks a protocol version tfmirror does not support: %w", s.name, err)
	}
	return err
}

// restated is an error said in other words: its message replaces the
// wrapped one's, which errors.Is and errors.As still find.
type restated struct {
	msg string
	err error
}

func (e *restated) Error() string { return e.msg }
func (e *restated) Unwrap() error { return e.err }

// apiGet fetches a registry API document, with the host's credentials,
// over https only.
func (c *Client) apiGet(ctx context.Context, host addrs.Hostname, u *url.URL, limit int64) ([]byte, *url.URL, error) {
	return c.apiGetWith(ctx, c.api, host, u, limit)
}

// apiGetWith is apiGet with the https-only fetcher f.
func (c *Client) apiGetWith(ctx context.Context, f *httpx.Fetcher, host addrs.Hostname, u *url.URL, limit int64) ([]byte, *url.URL, error) {
	header := http.Header{"Accept": {"application/json"}}
	if tok, ok := c.tokens[host]; ok {
		header.Set("Authorization", "Bearer "+tok)
	}
	data, final, mt, err := f.Document(ctx, u, header, limit)
	if err != nil {
		_, sent := c.tokens[host]
		return nil, nil, explainStatus(host, sent, err)
	}
	if mt == "text/html" {
		return nil, nil, fmt.Errorf("%s returned an HTML page instead of JSON (a login page or proxy error?)", httpx.Redact(final))
	}
	return data, final, nil
}

// explainStatus says what to do about a refusal (401, 403): set a token,
// or, when one was sent (sent), check it.
func explainStatus(host addrs.Hostname, sent bool, err error) error {
	var se *httpx.StatusError
	if !errors.As(err, &se) || (se.StatusCode != http.StatusUnauthorized && se.StatusCode != http.StatusForbidden) {
		return err
	}
	if sent {
		return fmt.Errorf("%w: the registry refused the token tfmirror sent (from the manifest's credentials %q block or %s): check that it is current and allowed to read this", err, host.ForDisplay(), TokenVariable(host))
	}
	return fmt.Errorf("%w: set a token with a credentials %q block in the manifest or the %s environment variable", err, host.ForDisplay(), TokenVariable(host))
}

// TokenVariable names the environment variable that holds host's token.
func TokenVariable(host addrs.Hostname) string {
	name := strings.ReplaceAll(string(host), "-", "__")
	return "TF_TOKEN_" + strings.ReplaceAll(name, ".", "_")
}

func isNotFound(err error) bool {
	var se *httpx.StatusError
	return errors.As(err, &se) && se.StatusCode == http.StatusNotFound
}

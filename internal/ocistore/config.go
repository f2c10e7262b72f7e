package ocistore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// Config is what New needs besides the destination: what library code may
// not read itself (the environment) and the client's settings.
//
// Credentials for the registry named by the template are, in this order:
//   - TFMIRROR_OCI_USERNAME and TFMIRROR_OCI_PASSWORD from Environ (both,
//     or neither; the password may be a registry token);
//   - the Docker-style config file as Docker and ORAS find it:
//     $DOCKER_CONFIG/config.json, else $HOME/.docker/config.json, with
//     its "auths", "credHelpers" and "credsStore" (credential helpers
//     docker-credential-NAME are run as Docker runs them);
//   - then, as fallbacks, the containers-auth.json(5) files podman,
//     skopeo and OpenTofu read: $REGISTRY_AUTH_FILE,
//     $XDG_RUNTIME_DIR/containers/auth.json and
//     ${XDG_CONFIG_HOME:-$HOME/.config}/containers/auth.json;
//   - else none (anonymous).
//
// Credentials are only ever given to the template's registry host; a
// redirect to another origin (scheme, host or port) drops them, and a
// token service (the realm of a Bearer challenge) on another host or port
// gets them only when TokenRealms names it for the registry.
type Config struct {
	// Environ is the process environment as the CLI was given it,
	// "KEY=value" strings; for a duplicated key the last one counts. Read:
	// the credential variables above, SSL_CERT_FILE (a PEM file replacing
	// the system certificate store), HTTPS_PROXY, HTTP_PROXY and NO_PROXY
	// (either case).
	Environ []string
	// UserAgent is sent with every request; empty: "tfmirror".
	UserAgent string
	// ClientCertificates are presented for mutual TLS, each only to its
	// registry host (lowercase, without port).
	ClientCertificates map[string]tls.Certificate
	// Retries is how often a request that failed in a way that may go away
	// (a connection error, 429, 5xx) is retried, with backoff; an upload
	// is retried from the start of its file. 0: never. Each retry waits
	// MinBackoff doubled for each earlier one, up to MaxBackoff, jittered
	// (both 0: 200ms and 5s), or the answer's Retry-After (up to
	// httpx.MaxRetryAfter), and is told to the context's notify.Handler.
	Retries                int
	MinBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds connecting and the TLS handshake; 0: 15s.
	ConnectTimeout time.Duration
	// HeaderTimeout bounds the wait for response headers once a request
	// is sent; 0: 60s.
	HeaderTimeout time.Duration
	// StallTimeout, and SpeedLimit (bytes a second) over SpeedTime, bound
	// every answer's body, blobs and manifests included, as they bound
	// downloads (httpx.WatchTransport): a registry that stops sending, or
	// trickles, fails the read that waits for it. 0: no limit.
	StallTimeout time.Duration
	SpeedLimit   int64
	SpeedTime    time.Duration
	// MaxTags bounds the tags of one repository a listing reads, and
	// MaxListPages the pages of one listing (of tags, of referrers):
	// past either the listing fails with ErrListTooLong. 0:
	// DefaultMaxTags and DefaultMaxListPages.
	MaxTags, MaxListPages int
	// Parallel is the default of PushOptions.Parallel; 0: 4.
	Parallel int
	// TokenRealms are, per registry host (as in the template, lower
	// case), the hosts ("host" or "host:port") of a token service on
	// another host or port that may receive the registry's credentials.
	// A token service on the registry's own host and port always may; any
	// other gets the credentials refused (realmGuard).
	TokenRealms map[string][]string
}

// Environment variables of explicit credentials.
const (
	EnvUsername = "TFMIRROR_OCI_USERNAME"
	EnvPassword = "TFMIRROR_OCI_PASSWORD"
)

const (
	defaultConnectTimeout = 15 * time.Second
	defaultHeaderTimeout  = 60 * time.Second
	defaultParallel       = 4
	defaultMinBackoff     = 200 * time.Millisecond
	defaultMaxBackoff     = 5 * time.Second
	maxRedirects          = 10
)

// credentialSource resolves the credentials of one registry host.
type credentialSource struct {
	registry string // host[:port] of the template
	explicit *auth.Credential
	store    credentials.Store
	// files names where credentials were looked for, for messages.
	files []string
	// given records that a credential was found and handed to the
	// registry's auth: a token that does not cover a repository then means
	// the credentials may not, rather than that there were none.
	given atomic.Bool
}

// newCredentialSource finds the credentials of registry as described on
// Config.
func newCredentialSource(registry string, env environ.Env) (*credentialSource, error) {
	src := &credentialSource{registry: registry}
	user, pass := env[EnvUsername], env[EnvPassword]
	switch {
	case user != "" && pass != "":
		src.explicit = &auth.Credential{Username: user, Password: pass}
		src.files = []string{EnvUsername + "/" + EnvPassword}
		return src, nil
	case user != "":
		return nil, fmt.Errorf("%s is set but %s is not", EnvUsername, EnvPassword)
	case pass != "":
		return nil, fmt.Errorf("%s is set but %s is not", EnvPassword, EnvUsername)
	}

	primary := ""
	if d := env["DOCKER_CONFIG"]; d != "" {
		primary = filepath.Join(d, "config.json")
	} else if h := env["HOME"]; h != "" {
		primary = filepath.Join(h, ".docker", "config.json")
	}
	var fallbacks []string
	if f := env["REGISTRY_AUTH_FILE"]; f != "" {
		fallbacks = append(fallbacks, f)
	}
	if d := env["XDG_RUNTIME_DIR"]; d != "" {
		fallbacks = append(fallbacks, filepath.Join(d, "containers", "auth.json"))
	}
	if d := env.First("XDG_CONFIG_HOME"); d != "" {
		fallbacks = append(fallbacks, filepath.Join(d, "containers", "auth.json"))
	} else if h := env["HOME"]; h != "" {
		fallbacks = append(fallbacks, filepath.Join(h, ".config", "containers", "auth.json"))
	}

	var stores []credentials.Store
	for i, path := range append([]string{primary}, fallbacks...) {
		if path == "" {
			continue
		}
		if i > 0 {
			if _, err := os.Stat(path); err != nil {
				continue // a missing fallback file is not worth a message
			}
		}
		st, err := credentials.NewStore(path, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("read the Docker-style credentials file %s: %w", path, err)
		}
		stores = append(stores, st)
		src.files = append(src.files, path)
	}
	switch len(stores) {
	case 0:
	case 1:
		src.store = stores[0]
	default:
		src.store = credentials.NewStoreWithFallbacks(stores[0], stores[1:]...)
	}
	return src, nil
}

// credential is the auth.CredentialFunc of the registry's client: the
// template's host gets its credentials, any other host (a token realm
// elsewhere, a redirect target) none.
func (c *credentialSource) credential(ctx context.Context, hostport string) (auth.Credential, error) {
	if !c.sameRegistry(hostport) {
		return auth.EmptyCredential, nil
	}
	if c.explicit != nil {
		c.given.Store(true)
		return *c.explicit, nil
	}
	if c.store == nil {
		return auth.EmptyCredential, nil
	}
	cred, err := credentials.Credential(c.store)(ctx, hostport)
	if err != nil {
		// The message of a helper's failure may quote what the helper
		// printed, never a secret it returned.
		return auth.EmptyCredential, fmt.Errorf("credentials for %s: %w", hostport, err)
	}
	if cred != auth.EmptyCredential {
		c.given.Store(true)
	}
	return cred, nil
}

func (c *credentialSource) sameRegistry(hostport string) bool {
	if strings.EqualFold(hostport, c.registry) {
		return true
	}
	// oras sends Docker Hub's traffic to registry-1.docker.io.
	return c.registry == "docker.io" && hostport == "registry-1.docker.io"
}

// describe says where credentials were looked for, for messages.
func (c *credentialSource) describe() string {
	if len(c.files) == 0 {
		return "no Docker config file (neither DOCKER_CONFIG nor HOME is set) and no " + EnvUsername
	}
	return strings.Join(c.files, ", ")
}

// newHTTPClient is the client under the auth client: httpx's transport
// (the CA store of cfg, proxies of env, bounded connect and header
// times, and stall and speed limits on every body), retries of what may
// go away, and redirects that never carry credentials to another origin.
func newHTTPClient(cfg Config, env environ.Env) (*http.Client, error) {
	caFile := env["SSL_CERT_FILE"]
	policy := httpx.Policy{
		ConnectTimeout: cfg.ConnectTimeout, HeaderTimeout: cfg.HeaderTimeout,
		StallTimeout: cfg.StallTimeout, SpeedLimit: cfg.SpeedLimit, SpeedTime: cfg.SpeedTime,
	}
	if policy.ConnectTimeout <= 0 {
		policy.ConnectTimeout = defaultConnectTimeout
	}
	if policy.HeaderTimeout <= 0 {
		policy.HeaderTimeout = defaultHeaderTimeout
	}
	tr, err := httpx.NewTransport(httpx.Environment{
		CAFile:     caFile,
		HTTPProxy:  env.First("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: env.First("HTTPS_PROXY", "https_proxy"),
		NoProxy:    env.First("NO_PROXY", "no_proxy"),
	}, policy)
	if err != nil {
		return nil, fmt.Errorf("SSL_CERT_FILE: %w", err)
	}
	tr.MaxIdleConnsPerHost = 16 // parallel uploads to one registry
	// Every body is watched, below the retries: an attempt that stalls
	// fails the read waiting for it.
	base := httpx.WatchTransport(httpx.PerHost(tr, cfg.ClientCertificates), policy)
	return &http.Client{
		Transport:     &httpx.RetryTransport{Base: base, Policy: cfg.retryPolicy(), Retryable: retryable},
		CheckRedirect: checkRedirect,
	}, nil
}

// retryPolicy is how often and how long requests and uploads are retried.
func (c Config) retryPolicy() httpx.Policy {
	p := httpx.Policy{Retries: max(c.Retries, 0), MinBackoff: c.MinBackoff, MaxBackoff: c.MaxBackoff}
	if p.MinBackoff == 0 && p.MaxBackoff == 0 {
		p.MinBackoff, p.MaxBackoff = defaultMinBackoff, defaultMaxBackoff
	}
	return p
}

// retryable is oras's default predicate, except that an untrusted
// certificate stays untrusted and a connection closed before the answer
// (io.EOF: a proxy or the registry dropping it) is tried again.
func retryable(resp *http.Response, err error) (bool, error) {
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return false, nil
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return false, nil
	}
	return retry.DefaultPredicate(resp, err)
}

// checkRedirect drops the Authorization header once a redirect chain has
// left the origin (scheme, host and port) of its first request, as
// oras-go's auth client does too: net/http alone keeps it for a redirect
// to the same host name on another port, or to a subdomain. A registry
// sending blob downloads to S3 or a CDN must not receive the registry's
// token there.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	httpx.DropCredentials(req, via)
	return nil
}

// realmGuard is the transport of one registry's auth client: a request
// that carries the registry's credentials (basic authentication, or the
// OAuth2 form with a password or refresh token: what the auth client
// sends a token realm) to another origin than the registry's is refused
// before it is sent, unless its host is one of realms. A Bearer challenge
// may name any realm; oras-go refuses plain http and private addresses,
// but would send the password to https://auth.other.example.
type realmGuard struct {
	next     http.RoundTripper
	registry string // host[:port] of the template
	realms   []string
}

// guardRealms returns c with its transport behind a realmGuard for
// registry.
func guardRealms(c *http.Client, registry string, realms []string) *http.Client {
	g := *c
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	g.Transport = realmGuard{next: next, registry: hostPort443(strings.ToLower(registry)), realms: realms}
	return &g
}

func (g realmGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if !carriesCredentials(req) || g.own(req.URL) || httpx.HostMatches(g.realms, req.URL) {
		return g.next.RoundTrip(req)
	}
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, &RealmError{Registry: g.registry, Realm: httpx.Redact(&url.URL{Scheme: req.URL.Scheme, Host: req.URL.Host, Path: req.URL.Path})}
}

// own reports whether u is on the registry's origin (Docker Hub's
// traffic goes to registry-1.docker.io).
func (g realmGuard) own(u *url.URL) bool {
	host := hostPort443(strings.ToLower(u.Host))
	return u.Scheme == "https" && (host == g.registry || (g.registry == "docker.io" && host == "registry-1.docker.io"))
}

// hostPort443 is host[:port] without an explicit ":443", https's port.
func hostPort443(hostport string) string {
	return strings.TrimSuffix(hostport, ":443")
}

// carriesCredentials reports whether req is what the auth client sends a
// token realm with credentials.
func carriesCredentials(req *http.Request) bool {
	if _, _, ok := req.BasicAuth(); ok {
		return true
	}
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return req.Method == http.MethodPost && mt == "application/x-www-form-urlencoded"
}

// RealmError is a registry's credentials refused to its token service on
// another host.
type RealmError struct {
	Registry string // host[:port]
	Realm    string // the realm's URL without its query
}

func (e *RealmError) Error() string {
	return fmt.Sprintf("refused to send the credentials of %s to its token service %s on another host or port: a registry's credentials go only to its own host and port, and to token services the manifest names for it: settings { oci_token_realms = { %q = [%q] } }",
		e.Registry, e.Realm, e.Registry, realmHost(e.Realm))
}

// realmHost is the host[:port] of a realm's URL, for the hint.
func realmHost(realm string) string {
	u, err := url.Parse(realm)
	if err != nil {
		return "HOST"
	}
	return hostPort443(u.Host)
}

package modfetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/mirror"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxDownloadBytes = 512 << 20
	DefaultTimeout          = 10 * time.Minute
)

// Config says how a Fetcher reaches module packages.
type Config struct {
	// HTTP is the caller's client (TLS trust and client certificates
	// already configured) for archives; nil means http.DefaultClient. It
	// is copied, never changed. Git does not use it: git trusts
	// GIT_SSL_CAINFO, or SSL_CERT_FILE from Environ, and presents
	// ClientCertificates.
	HTTP *http.Client
	// ClientCertificates are the client certificates (mutual TLS) git
	// presents, each only to its host (a host name, without port; any
	// port), over https only: pass the map HTTP's transport presents to
	// archive hosts (httpx.Environment.ClientCertificates), so that both
	// present the same. For a fetch, git gets the host's certificate and
	// key as PEM files (mode 0600) in a directory of the fetch's own (mode
	// 0700), removed when the fetch ends, named by http.<url>.sslCert and
	// http.<url>.sslKey scoped to the repository's scheme and host, through
	// GIT_CONFIG_COUNT rather than the command line; redirects are
	// refused. Certificates for other hosts are not offered.
	ClientCertificates map[string]tls.Certificate
	// Git is the git executable; "" means "git" from PATH.
	Git string
	// Environ is the environment git runs in, in os.Environ's form (the
	// CLI passes its own, for proxies and SSL_CERT_FILE); nil means none
	// but what Fetch sets. Fetch drops every GIT_* variable but
	// GIT_SSL_CAINFO and GIT_SSL_CAPATH, and HOME, XDG_CONFIG_HOME,
	// SSH_ASKPASS and GCM_INTERACTIVE; it sets HOME to an empty temporary
	// directory, GIT_TERMINAL_PROMPT=0, GIT_ASKPASS and SSH_ASKPASS empty,
	// GCM_INTERACTIVE=never, GIT_CONFIG_NOSYSTEM=1, and GIT_SSL_CAINFO to
	// SSL_CERT_FILE when only that is set.
	Environ []string
	// Credentials returns the Authorization header value for a host
	// (hostname[:port] as in the URL), if any. It is sent only to that
	// exact host, never after a redirect to another host, and never
	// printed.
	Credentials func(host string) (string, bool)
	// MaxDownloadBytes bounds an archive download; 0 means
	// DefaultMaxDownloadBytes.
	MaxDownloadBytes int64
	// Limits bound extraction, a git repository while it is fetched and
	// checked out, and the fetched package (zero fields take
	// hashing.DefaultModuleLimits).
	Limits hashing.ModuleLimits
	// Timeout bounds a whole Fetch; 0 means DefaultTimeout.
	Timeout time.Duration
	// Net is the transfer policy, the one provider downloads run with:
	// archives are downloaded by an httpx.Fetcher with it (connect,
	// header, stall and speed limits, retries, MaxBodyBytes), and git's
	// transfers give up as its stall and speed limits say
	// (http.lowSpeedLimit and http.lowSpeedTime). The zero Policy means
	// httpx.DefaultPolicy().
	Net httpx.Policy
	// Locations is the rule FetchModule holds a registry's locations to
	// (httpx.Locations): where the registry may send the fetch, and which
	// hosts' credentials and client certificates its locations may have.
	Locations httpx.Locations
}

// Fetcher fetches module packages. It is safe for concurrent use.
type Fetcher struct {
	http        *http.Client
	git         string
	environ     []string
	credentials func(host string) (string, bool)
	clientCerts map[string]tls.Certificate // by lowercase host name
	maxDownload int64
	limits      hashing.ModuleLimits
	timeout     time.Duration
	net         httpx.Policy
	locations   httpx.Locations
	// withheld says what of its host's a location was not given (under),
	// for the hint of a failure: its credentials, its client certificate.
	withheld []withheld
}

// withheld is what a location was not given, for the hint of a failure.
type withheld struct {
	what, to    string // "send its credentials for HOST", "send them"
	block, host string // the manifest block that would allow it
}

// New returns a Fetcher for cfg, its zero values replaced by defaults.
func New(cfg Config) *Fetcher {
	f := &Fetcher{
		http: cfg.HTTP, git: cfg.Git, environ: cfg.Environ, credentials: credentialsOf(cfg.Credentials),
		maxDownload: cfg.MaxDownloadBytes, limits: cfg.Limits.WithDefaults(), timeout: cfg.Timeout, locations: cfg.Locations,
		clientCerts: make(map[string]tls.Certificate, len(cfg.ClientCertificates)), net: cfg.Net,
	}
	if f.net == (httpx.Policy{}) {
		f.net = httpx.DefaultPolicy()
	}
	for host, cert := range cfg.ClientCertificates {
		f.clientCerts[strings.ToLower(host)] = cert
	}
	if f.http == nil {
		f.http = http.DefaultClient
	}
	if f.git == "" {
		f.git = "git"
	}
	if f.maxDownload <= 0 {
		f.maxDownload = DefaultMaxDownloadBytes
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	return f
}

// credentialsOf returns creds as the Fetcher asks it: nil, or an empty
// value, is no credentials.
func credentialsOf(creds func(host string) (string, bool)) func(host string) (string, bool) {
	return func(host string) (string, bool) {
		if creds == nil {
			return "", false
		}
		auth, ok := creds(host)
		return auth, ok && auth != ""
	}
}

// Result says what Fetch fetched.
type Result struct {
	// Subdir is the slash-separated path inside the package root the
	// module lives in ("" = the root), with a glob component such as "*"
	// expanded to the single directory it matches. It is relative and has
	// no "..".
	Subdir string
	// Commit is the full commit hash checked out, for git sources.
	Commit string
	// SHA256 is the hex digest of the downloaded archive, for archives.
	SHA256 string
	// Source is the location as fetched (scheme, host, path and git ref),
	// without userinfo or other query parameters, for provenance.
	Source string
}

// Fetch fetches location into dst (an empty directory the caller made and
// removes), which becomes the package root: the whole archive or
// repository, even when the module lives in a subdirectory of it (modules
// may refer to their siblings). Errors name the location, redacted; what
// they quote from outside (git's messages, a server's, names in an
// archive) has its control characters escaped, and the message is
// bounded. The location is taken as the user's own: its host gets its
// credentials and client certificate; a location a registry named is
// fetched with FetchModule.
func (f *Fetcher) Fetch(ctx context.Context, location string, dst string) (Result, error) {
	src, err := parseLocation(location)
	if err != nil {
		return Result{}, &fetchError{location: src.showOr(location), err: err}
	}
	res, err := f.fetch(ctx, src, dst)
	if err != nil {
		return Result{}, &fetchError{location: src.shown, err: err}
	}
	return res, nil
}

// fetch fetches a parsed source into dst and checks the package.
func (f *Fetcher) fetch(ctx context.Context, src source, dst string) (Result, error) {
	if err := checkEmptyDir(dst); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var res Result
	var err error
	if src.git {
		res, err = f.fetchGit(ctx, src, dst)
	} else {
		res, err = f.fetchArchive(ctx, src, dst)
	}
	if err != nil {
		return Result{}, err
	}
	if err := checkTree(dst, f.limits); err != nil {
		return Result{}, fmt.Errorf("check package: %w", err)
	}
	if res.Subdir, err = resolveSubdir(dst, src.subdir); err != nil {
		return Result{}, err
	}
	res.Source = src.provenance()
	return res, nil
}

// showOr is how errors show the location: parsed and redacted, or, when
// it did not parse, its text without userinfo and at most 200 bytes.
func (s source) showOr(location string) string {
	if s.shown != "" {
		return s.shown
	}
	return excerpt.Quote(excerpt.WithoutUserinfo(location))
}

// checkEmptyDir refuses a dst that is not an empty directory.
func checkEmptyDir(dst string) error {
	d, err := os.Open(dst)
	if err != nil {
		return fmt.Errorf("open destination: %w", err)
	}
	defer func() { _ = d.Close() }() // read-only
	names, err := d.Readdirnames(1)
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("read destination %s: %w", dst, err)
	}
	return fmt.Errorf("destination %s is not empty (it holds %s)", dst, names[0])
}

// FetchModule is Fetch as the build's module fetcher
// (mirror.ModuleFetcher), of a location a registry named: it is held to
// the location rule (Config.Locations) with that registry as its namer,
// before anything is fetched. A location on the registry's own origin
// (its download endpoint's, or https://REGISTRY_HOST) gets its host's
// credentials and client certificate, as Fetch gives them; one on
// another host gets them only when the rule lists the registry for that
// host (for_locations_from in the manifest), and a failure then says what
// was withheld. Redirects of archive downloads are held to the rule too.
func (f *Fetcher) FetchModule(ctx context.Context, loc mirror.ModuleLocation, dir string) (mirror.ModuleFetch, error) {
	src, err := parseLocation(loc.Location)
	if err != nil {
		return mirror.ModuleFetch{}, fmt.Errorf("fetch module %s: %w", src.showOr(loc.Location), err)
	}
	by := namerOf(loc)
	if err := f.locations.Check(ctx, by, src.url); err != nil {
		return mirror.ModuleFetch{}, fmt.Errorf("fetch module %s: %w", src.shown, err)
	}
	g := f.under(by, src.url)
	res, err := g.fetch(httpx.WithLocation(ctx, f.locations, by), src, dir)
	if err != nil {
		for _, w := range g.withheld {
			err = fmt.Errorf("%w (tfmirror did not %s: the location was named by the registry %s; to %s, list the registry in for_locations_from of the manifest's %s %q block)", err, w.what, by.Name, w.to, w.block, w.host)
		}
		return mirror.ModuleFetch{}, fmt.Errorf("fetch module %s: %w", src.shown, err)
	}
	return mirror.ModuleFetch{Subdir: res.Subdir, Commit: res.Commit, ArchiveSHA256: res.SHA256, Source: res.Source}, nil
}

// namerOf is the registry that named loc: its own origins are its
// download endpoint's and https://REGISTRY_HOST.
func namerOf(loc mirror.ModuleLocation) httpx.Namer {
	by := httpx.Namer{Name: string(loc.Registry), Kind: "registry", Own: []*url.URL{{Scheme: "https", Host: string(loc.Registry)}}}
	if u, err := url.Parse(loc.NamedAt); err == nil && u.Host != "" {
		by.Own = append(by.Own, u)
	}
	return by
}

// under returns a copy of f for fetching u, a location by names: the
// credentials and client certificate of u's host only when the rule lets
// the namer's locations have them.
func (f *Fetcher) under(by httpx.Namer, u *url.URL) *Fetcher {
	g := *f
	key := strings.ToLower(u.Host)
	if h, err := svchost.ForComparison(u.Host); err == nil {
		key = string(h)
	}
	if !f.locations.MayCarryCredentials(by, u, key) {
		if _, ok := f.credentials(u.Host); ok {
			g.withheld = append(g.withheld, withheld{fmt.Sprintf("send its credentials for %s", key), "send them", "credentials", key})
		}
		g.credentials = func(string) (string, bool) { return "", false }
	}
	if !f.locations.MayPresentCertificate(by, u) {
		if _, ok := f.clientCert(u); ok {
			host := strings.ToLower(u.Hostname())
			g.withheld = append(g.withheld, withheld{fmt.Sprintf("present its client certificate for %s", host), "present it", "client_certificate", host})
		}
		g.clientCerts = nil
	}
	return &g
}

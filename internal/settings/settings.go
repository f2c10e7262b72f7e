// Package settings holds the one value every command runs with: what the
// manifest says (credentials, host blocks, client certificates, upstreams,
// trust, limits), what the command line overrides (network flags,
// --require-signatures, --lock-timeout) and what the process environment
// provides (CA file, proxies, TF_TOKEN_*, cloud credentials), read once,
// each by one rule. Package config builds it from a manifest
// (Manifest.Settings); package endpoint opens every location with it, so
// no command reaches a registry, bucket or mirror with less than another.
//
// It owns the shape of the settings, and the Redactor that knows every
// credential they hold (what the command line must never print); it
// reads no file, flag or variable itself.
package settings

import (
	"crypto/tls"
	"maps"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/environ"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/mirror"
)

// Settings is what a command runs with.
type Settings struct {
	// Env is the process environment, the one place it is read from: for
	// a name set twice the last value counts, and an empty value is unset.
	Env environ.Env
	// UserAgent is sent with every request.
	UserAgent string
	// Net is the request policy: retries, timeouts, transfer limits.
	Net httpx.Policy
	// ClientCertificates are presented for mutual TLS, each only to its
	// host (a lowercase host name, without port), by every client a
	// command makes: registries, mirrors, OCI registries, module hosts.
	ClientCertificates map[string]tls.Certificate
	// Tokens are registry credentials by host: the manifest's credentials
	// blocks, then TF_TOKEN_* variables, which win, as in OpenTofu.
	Tokens map[addrs.Hostname]string
	// Services override service discovery per host (host blocks).
	Services map[addrs.Hostname]map[string]string
	// Locations is the rule for URLs registries and mirrors choose:
	// where they may send tfmirror, and which hosts' credentials their
	// locations may carry (httpx.Locations).
	Locations httpx.Locations
	// OCITokenRealms are, per OCI registry host (as in a repository
	// template), the token service hosts on another host or port that
	// may receive the registry's credentials.
	OCITokenRealms map[string][]string
	// Hosts is what the run learns about the hosts it fetches from,
	// shared by every client the command makes (httpx.Hosts); nil learns
	// nothing.
	Hosts *httpx.Hosts
	// Upstreams are where providers come from (provider_installation);
	// none means the origin registries.
	Upstreams []Upstream
	// Trust is the signature policy, --require-signatures applied.
	Trust mirror.TrustPolicy
	// VulnDB is the vulnerability database's location (--vulndb, else
	// the manifest's vulndb); "" for none.
	VulnDB string
	// Advisories is the manifest's vulnerabilities policy; nil when it
	// has none.
	Advisories *mirror.AdvisoryPolicy
	// ZipLimits bound what a provider package may unpack to.
	ZipLimits hashing.ZipLimits
	// ModuleLimits bound what a module package may hold.
	ModuleLimits hashing.ModuleLimits
	// ModuleTree bounds the module tree a build follows: depth, module
	// versions, calls per module (the manifest's max_module_depth,
	// max_modules and max_module_calls).
	ModuleTree mirror.ModuleTreeLimits
	// Lists bound the paginated listings read from outside: a bucket's
	// objects, an OCI repository's tags.
	Lists ListLimits
	// Parallel bounds concurrent transfers (--parallel); 0 means each
	// adapter's default.
	Parallel int
	// LockTimeout is how long to wait for a writer a command may not
	// write with.
	LockTimeout time.Duration
	// CacheDir holds what a command keeps between runs on this machine
	// (the workspace of a build with no local directory destination):
	// $XDG_CACHE_HOME/tfmirror, else ~/.cache/tfmirror, else "".
	CacheDir string
	// Now is the clock of the cool-down; nil means time.Now.
	Now func() time.Time
	// Command is the command that runs (Process.Command), for the
	// mirror's change records.
	Command string
	// SignKey, if set, signs catalog.json wherever a command rewrites a
	// tree's views (--sign-key), and a bundle's manifest.
	SignKey *signing.SigningKey
	// CatalogKeys, if set, are the keys whose signature of a mirror's
	// catalog.json verify checks and lock trusts (--catalog-key).
	CatalogKeys *signing.TrustedKeys
}

// ListLimits bound one paginated listing read from outside, so that a
// store or registry whose listing never ends cannot keep a command
// listing: past a bound the listing fails with an error naming it. A
// zero field means the adapter's default (s3store.DefaultMaxListPages,
// s3store.DefaultMaxListObjects, ocistore.DefaultMaxTags).
type ListLimits struct {
	// MaxPages bounds the pages of one listing (the manifest's settings
	// max_list_pages).
	MaxPages int
	// MaxObjects bounds the objects of one bucket listing
	// (max_bucket_objects).
	MaxObjects int
	// MaxTags bounds the tags of one OCI repository
	// (max_repository_tags).
	MaxTags int
}

// Upstream is one method of the provider_installation block: where the
// providers it includes come from.
type Upstream struct {
	// Kind is "direct", "network_mirror", "oci_mirror" or
	// "filesystem_mirror".
	Kind string
	// Location is where the method reads, as a location endpoint parses
	// (a directory, https://..., oci://TEMPLATE); "" for direct.
	Location         string
	Include, Exclude []string
}

// Name says which upstream it is, in messages.
func (u Upstream) Name() string {
	if u.Location == "" {
		return u.Kind
	}
	return u.Kind + " " + u.Location
}

// HTTP is what an HTTP transport takes from the settings: the CA file and
// proxies of the environment (as Go programs read them: SSL_CERT_FILE,
// HTTPS_PROXY, HTTP_PROXY, NO_PROXY, upper case before lower case) and
// the client certificates.
func (s Settings) HTTP() httpx.Environment {
	return httpx.Environment{
		ClientCertificates: s.ClientCertificates,
		CAFile:             s.Env.First("SSL_CERT_FILE"),
		HTTPProxy:          s.Env.First("HTTP_PROXY", "http_proxy"),
		HTTPSProxy:         s.Env.First("HTTPS_PROXY", "https_proxy"),
		NoProxy:            s.Env.First("NO_PROXY", "no_proxy"),
	}
}

// Token returns the credentials for a registry host.
func (s Settings) Token(host addrs.Hostname) (string, bool) {
	t, ok := s.Tokens[host]
	return t, ok
}

// WithTokens returns the settings with tokens added (winning over those
// already there).
func (s Settings) WithTokens(more map[addrs.Hostname]string) Settings {
	s.Tokens = maps.Clone(s.Tokens)
	if s.Tokens == nil {
		s.Tokens = map[addrs.Hostname]string{}
	}
	maps.Copy(s.Tokens, more)
	return s
}

// Flags are what the command line says: the manifest to read and the
// settings given as flags, which win over the manifest's.
type Flags struct {
	// Config is the manifest's path; ConfigSet says it was given
	// explicitly (a missing default manifest may then be an empty one).
	Config    string
	ConfigSet bool
	// Net are the network flags' values, and NetSet names those given
	// (NetworkFlags): only those override the manifest's settings.
	Net    httpx.Policy
	NetSet map[string]bool
	// RequireSignatures refuses unsigned releases for every provider.
	RequireSignatures bool
	// VulnDB is --vulndb: the vulnerability database, "" for none given.
	VulnDB      string
	LockTimeout time.Duration
	Parallel    int
	// SignKey is the file of the OpenPGP private key that signs
	// (Settings.SignKey); CatalogKey the file of the public keys a signed
	// catalog is checked with (Settings.CatalogKeys).
	SignKey, CatalogKey string
}

// Process is what the process gives a command.
type Process struct {
	// Environ is the environment, in os.Environ's form.
	Environ []string
	// UserAgent is what tfmirror calls itself in requests.
	UserAgent string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Command is the command that runs, for the mirror's change records:
	// its name and the flags given, by name only (no value, so no
	// secret).
	Command string
	// Redactor, if set, is told every credential the settings built for
	// the command hold (config.Resolve adds them), so that what the
	// command prints never shows one.
	Redactor *Redactor
}

// Names of the network flags, which the manifest's settings block may
// also set; Flags.NetSet says which were given.
const (
	FlagRetries         = "retries"
	FlagConnectTimeout  = "connect-timeout"
	FlagHeaderTimeout   = "header-timeout"
	FlagStallTimeout    = "stall-timeout"
	FlagSpeedLimit      = "speed-limit"
	FlagSpeedTime       = "speed-time"
	FlagMaxArchiveBytes = "max-archive-bytes"
)

// NetworkFlags names every network flag.
var NetworkFlags = []string{
	FlagRetries, FlagConnectTimeout, FlagHeaderTimeout, FlagStallTimeout,
	FlagSpeedLimit, FlagSpeedTime, FlagMaxArchiveBytes,
}

// DefaultFlags are the flags' defaults.
func DefaultFlags() Flags {
	return Flags{Config: "mirror.hcl", Net: httpx.DefaultPolicy(), LockTimeout: 5 * time.Minute}
}

// InCI reports whether the environment kv (in os.Environ's form) says the
// process runs as a CI job: CI=true (or 1), as GitHub Actions, GitLab CI
// and most others set it. The command line reads it before the settings
// are resolved, to know whether to draw a status line.
func InCI(kv []string) bool {
	ci := environ.Parse(kv)["CI"]
	return strings.EqualFold(ci, "true") || ci == "1"
}

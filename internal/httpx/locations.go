package httpx

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Locations is the rule for locations: URLs that a server chooses for
// tfmirror to fetch, rather than the user. A module registry's download
// location, the download_url, shasums_url and shasums_signature_url of a
// provider registry's download document and the archive URLs of a network
// mirror's <version>.json are locations; the server that names one is its
// Namer.
//
//   - A location on one of its namer's own origins (scheme, host and port)
//     is the namer's own business: it is fetched as the namer itself is.
//   - Any other is refused when it is plain http, or on a loopback,
//     link-local, private, unspecified or carrier-grade NAT address (a
//     literal one, "localhost", or a name that resolves to one), unless its
//     host is Allowed: a server cannot send tfmirror to the services of
//     its own machine or network. A name that does not resolve is not
//     refused (a proxy may resolve it); one that resolves differently when
//     it is fetched (DNS rebinding) is not caught.
//   - A namer that is OwnOnly (a network mirror, whose documents only ever
//     need to name its own files) may name no other origin at all, unless
//     its host is Allowed.
//   - Redirects of a request made under WithLocation are held to the same
//     rule, hop by hop (CheckRedirectLocation), except that OwnOnly does
//     not apply to them: mirrors and registries send downloads to CDNs.
//   - A host's credentials go to a location on it only when the location
//     is its namer's own, or when the rule lists the namer for the host:
//     its token when CredentialsFrom does (MayCarryCredentials), its
//     client certificate when CertificatesFrom does (PerHost, and
//     MayPresentCertificate for clients other than Go's).
//
// The zero value allows nothing beyond the rule.
type Locations struct {
	// Allowed are hosts on which a namer may name locations whatever
	// their scheme and address: each "host" (any port) or "host:port",
	// lower case, an IPv6 address in brackets when a port follows
	// (ParseHostPattern).
	Allowed []string
	// CredentialsFrom lists, per host (as the credentials are keyed:
	// lower case, with a port only when it is not 443), the namers (their
	// Name) whose locations on that host may carry the host's
	// credentials.
	CredentialsFrom map[string][]string
	// CertificatesFrom lists, per host (lower case, without port, as
	// client certificates are keyed), the namers whose locations on that
	// host may be fetched presenting the host's client certificate.
	CertificatesFrom map[string][]string
}

// Namer is the server that chose a location.
type Namer struct {
	// Name is how messages and Locations.CredentialsFrom name it: the
	// registry host a module or provider address names, or a mirror's URL.
	Name string
	// Kind says what it is in messages: "registry", "network mirror".
	Kind string
	// Own are its own origins: the URL it answered at, and the one its
	// name stands for.
	Own []*url.URL
	// OwnOnly refuses locations on any other origin, unless Allowed.
	OwnOnly bool
}

// owns reports whether u is on one of n's own origins.
func (n Namer) owns(u *url.URL) bool {
	return slices.ContainsFunc(n.Own, func(o *url.URL) bool { return o != nil && sameOrigin(o, u) })
}

// LocationError is a refused location.
type LocationError struct {
	Namer  Namer
	URL    string // redacted
	Host   string // host:port, for the hint
	Reason string
}

func (e *LocationError) Error() string {
	return fmt.Sprintf("refused %s, named by the %s %s: %s; to allow it, list its host in the manifest's settings block: allowed_location_hosts = [%q]",
		e.URL, kindOr(e.Namer.Kind), e.Namer.Name, e.Reason, e.Host)
}

// Check refuses u, a location by names, as the rule says. Errors are
// *LocationError and name the location only as Redact shows it.
func (l Locations) Check(ctx context.Context, by Namer, u *url.URL) error {
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("refused %s, named by the %s %s: scheme %q is not http or https", Redact(u), kindOr(by.Kind), by.Name, u.Scheme)
	}
	if by.owns(u) || l.allows(u) {
		return nil
	}
	refuse := func(reason string) error {
		return &LocationError{Namer: by, URL: Redact(u), Host: net.JoinHostPort(strings.ToLower(u.Hostname()), portOf(u)), Reason: reason}
	}
	if by.OwnOnly {
		return refuse("it is not on the " + kindOr(by.Kind) + "'s own origin, and a " + kindOr(by.Kind) + " names only its own files")
	}
	if u.Scheme == "http" {
		return refuse("it is plain http, on another origin than the " + kindOr(by.Kind) + "'s")
	}
	if why := internalHost(ctx, u.Hostname()); why != "" {
		return refuse(why)
	}
	return nil
}

func kindOr(kind string) string {
	if kind == "" {
		return "server"
	}
	return kind
}

// allows reports whether u's host is Allowed.
func (l Locations) allows(u *url.URL) bool { return HostMatches(l.Allowed, u) }

// HostMatches reports whether u's host matches one of patterns, each
// "host" (any port) or "host:port" (ParseHostPattern); a pattern that
// does not parse matches nothing.
func HostMatches(patterns []string, u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), portOf(u)
	for _, a := range patterns {
		h, p, err := ParseHostPattern(a)
		if err == nil && h == host && (p == "" || p == port) {
			return true
		}
	}
	return false
}

// MayCarryCredentials reports whether a location by names may carry the
// credentials of its host, keyed by credentialsHost (the form
// CredentialsFrom uses).
func (l Locations) MayCarryCredentials(by Namer, u *url.URL, credentialsHost string) bool {
	if by.owns(u) {
		return true
	}
	return slices.Contains(l.CredentialsFrom[credentialsHost], by.Name)
}

// ParseHostPattern parses an entry of Locations.Allowed: "host" or
// "host:port" ("[::1]:8080" for an IPv6 address with a port, "::1"
// without). It returns the host in lower case without brackets, and the
// port ("" for any).
func ParseHostPattern(s string) (host, port string, err error) {
	if s == "" || strings.ContainsAny(s, "/@?#\\ \t") || strings.Contains(s, "://") {
		return "", "", fmt.Errorf("%q is not a host or host:port", s)
	}
	host = s
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		if host, port, err = net.SplitHostPort(s); err != nil {
			return "", "", fmt.Errorf("%q is not a host or host:port", s)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
		}
	}
	if host == "" || strings.ContainsAny(host, "[]") {
		return "", "", fmt.Errorf("%q is not a host or host:port", s)
	}
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", "", fmt.Errorf("%q is not a host or host:port", s)
	}
	return strings.ToLower(host), port, nil
}

// lookupNetIP resolves host names; tests replace it.
var lookupNetIP = net.DefaultResolver.LookupNetIP

// cgnat is the shared address space of carrier-grade NAT (RFC 6598),
// which cloud providers use for metadata services too.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// internalAddr reports whether a is not a public address.
func internalAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsPrivate() ||
		a.IsUnspecified() || a.IsMulticast() || cgnat.Contains(a)
}

// internalHost says why host is not a public host, or "" when it is (or
// when it does not resolve).
func internalHost(ctx context.Context, host string) string {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return fmt.Sprintf("%s is this machine (a loopback name)", host)
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if internalAddr(a) {
			return fmt.Sprintf("%s is a loopback, link-local, private or unspecified address", host)
		}
		return ""
	}
	addrs, err := lookupNetIP(ctx, "ip", h)
	if err != nil {
		return "" // a proxy may resolve it; a bogus name fails when fetched
	}
	for _, a := range addrs {
		if internalAddr(a) {
			return fmt.Sprintf("%s resolves to %s, a loopback, link-local, private or unspecified address", host, a.Unmap())
		}
	}
	return ""
}

// locationKey is the context key of a request's location guard.
type locationKey struct{}

type locationGuard struct {
	rule Locations
	by   Namer
}

// WithLocation returns ctx for fetching a location by names: every
// redirect of a request made with it is checked as the rule says
// (CheckRedirectLocation), and PerHost presents a client certificate only
// to the namer's own origins.
func WithLocation(ctx context.Context, rule Locations, by Namer) context.Context {
	return context.WithValue(ctx, locationKey{}, locationGuard{rule: rule, by: by})
}

// CheckRedirectLocation refuses a redirect of a request made under
// WithLocation to where the rule does not let its namer send tfmirror
// (OwnOnly aside). Every redirect policy of tfmirror's clients calls it.
func CheckRedirectLocation(req *http.Request) error {
	g, ok := req.Context().Value(locationKey{}).(locationGuard)
	if !ok {
		return nil
	}
	by := g.by
	by.OwnOnly = false
	err := g.rule.Check(req.Context(), by, req.URL)
	var le *LocationError
	if errors.As(err, &le) {
		return fmt.Errorf("refused a redirect: %w", err)
	}
	return err
}

// MayPresentCertificate reports whether a location by names may be
// fetched presenting the client certificate of its host (lower case,
// without port), for clients that do not go through PerHost (git).
func (l Locations) MayPresentCertificate(by Namer, u *url.URL) bool {
	return by.owns(u) || slices.Contains(l.CertificatesFrom[strings.ToLower(u.Hostname())], by.Name)
}

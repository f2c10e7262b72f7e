package httpx

import (
	"crypto/tls"
	"net/http"
	"slices"
	"strings"
)

// PerHost returns base, or, when certs names hosts (lowercase host names,
// without port), a RoundTripper that sends each request for one of them
// through a clone of base presenting that host's client certificate
// (mutual TLS), and every other request through base. A redirect to
// another host is a new request: the certificate is never presented to a
// host it was not configured for. A request for a location (WithLocation)
// that is not its namer's own gets the certificate only when the rule's
// CertificatesFrom lists the namer for the host.
func PerHost(base *http.Transport, certs map[string]tls.Certificate) http.RoundTripper {
	if len(certs) == 0 {
		return base
	}
	r := perHost{base: base, hosts: make(map[string]*http.Transport, len(certs))}
	for host, cert := range certs {
		t := base.Clone()
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if base.TLSClientConfig != nil {
			cfg = base.TLSClientConfig.Clone()
		}
		cfg.Certificates = []tls.Certificate{cert}
		t.TLSClientConfig = cfg
		r.hosts[strings.ToLower(host)] = t
	}
	return r
}

type perHost struct {
	base  *http.Transport
	hosts map[string]*http.Transport
}

func (r perHost) RoundTrip(req *http.Request) (*http.Response, error) {
	host := strings.ToLower(req.URL.Hostname())
	if t, ok := r.hosts[host]; ok && req.URL.Scheme == "https" && mayPresentCertificate(req, host) {
		return t.RoundTrip(req)
	}
	return r.base.RoundTrip(req)
}

// mayPresentCertificate reports whether req may present host's client
// certificate: any request but one for a location that is not its
// namer's own, unless the rule lets the namer's locations have it.
func mayPresentCertificate(req *http.Request, host string) bool {
	g, ok := req.Context().Value(locationKey{}).(locationGuard)
	return !ok || g.by.owns(req.URL) || slices.Contains(g.rule.CertificatesFrom[host], g.by.Name)
}

package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/internal/httpx"
)

// The manifest's say over locations (URLs a registry or mirror chooses;
// the rule is httpx.Locations') and over OCI token services:
//
//	settings {
//	  # A registry or mirror may send tfmirror to these hosts even over
//	  # plain http, on loopback or private addresses, or off a network
//	  # mirror's own origin: "host" (any port) or "host:port".
//	  allowed_location_hosts = ["artifacts.internal:8080"]
//	  # OCI registries whose token service is on another host or port:
//	  # the registry's credentials may go to these realms.
//	  oci_token_realms = { "registry.example.com" = ["auth.example.com"] }
//	}
//
//	credentials "code.example.com" {
//	  token = "..."   # may be left to TF_TOKEN_code_example_com
//	  # code.example.com's token goes to locations on it that these
//	  # registries name (as well as to its own registry's).
//	  for_locations_from = ["registry.example.com"]
//	}
//
//	client_certificate "code.example.com" {
//	  cert_file = "..."
//	  key_file  = "..."
//	  for_locations_from = ["registry.example.com"]
//	}

// decodeHostPatterns reads a list of "host" or "host:port" entries, each
// lower-cased.
func decodeHostPatterns(attr *hcl.Attribute) ([]string, hcl.Diagnostics) {
	var raw []string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	out := make([]string, 0, len(raw))
	for _, s := range raw {
		host, port, err := httpx.ParseHostPattern(s)
		if err != nil {
			return nil, errAt(attr.Expr.Range(), "Invalid "+attr.Name, err.Error()+": write a host name or address, with a port to allow that port only, without a scheme or path.")
		}
		if port != "" {
			host = joinHostPort(host, port)
		}
		if !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out, nil
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// decodeTokenRealms reads oci_token_realms: registry host (as in the
// repository template) to the hosts of its token service.
func decodeTokenRealms(attr *hcl.Attribute) (map[string][]string, hcl.Diagnostics) {
	var raw map[string][]string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	out := make(map[string][]string, len(raw))
	for registry, realms := range raw {
		host, port, err := httpx.ParseHostPattern(registry)
		if err != nil {
			return nil, errAt(attr.Expr.Range(), "Invalid oci_token_realms", fmt.Sprintf("registry %s; write the registry's host as in the repository template.", err))
		}
		if port != "" {
			host = joinHostPort(host, port)
		}
		for _, r := range realms {
			rh, rp, err := httpx.ParseHostPattern(r)
			if err != nil {
				return nil, errAt(attr.Expr.Range(), "Invalid oci_token_realms", fmt.Sprintf("realm of %s: %s; write the token service's host, with a port unless it is 443.", registry, err))
			}
			if rp != "" {
				rh = joinHostPort(rh, rp)
			}
			if !slices.Contains(out[host], rh) {
				out[host] = append(out[host], rh)
			}
		}
	}
	return out, nil
}

// decodeLocationsFrom reads a block's for_locations_from: registry host
// names, as module and provider addresses write them.
func decodeLocationsFrom(attr *hcl.Attribute) ([]string, hcl.Diagnostics) {
	var raw []string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	out := make([]string, 0, len(raw))
	for _, s := range raw {
		h, err := svchost.ForComparison(s)
		if err != nil || strings.ContainsAny(s, "/@") {
			return nil, errAt(attr.Expr.Range(), "Invalid for_locations_from", fmt.Sprintf("%q is not a registry host name (as a module or provider address writes it, such as \"registry.example.com\").", s))
		}
		if !slices.Contains(out, string(h)) {
			out = append(out, string(h))
		}
	}
	return out, nil
}

// Locations is the location rule the manifest sets: its allowed hosts,
// and which registries' locations may carry which host's token and
// client certificate.
func (m *Manifest) Locations() httpx.Locations {
	l := httpx.Locations{Allowed: slices.Clone(m.Settings.AllowedLocationHosts)}
	for host, from := range m.TokensFrom {
		if l.CredentialsFrom == nil {
			l.CredentialsFrom = map[string][]string{}
		}
		l.CredentialsFrom[string(host)] = slices.Clone(from)
	}
	for host, c := range m.ClientCertificates {
		if len(c.ForLocationsFrom) == 0 {
			continue
		}
		if l.CertificatesFrom == nil {
			l.CertificatesFrom = map[string][]string{}
		}
		// keyed as loadClientCertificates keys the certificates
		l.CertificatesFrom[strings.ToLower(string(host))] = slices.Clone(c.ForLocationsFrom)
	}
	return l
}

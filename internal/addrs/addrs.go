package addrs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	tfaddr "github.com/opentofu/registry-address/v2"
	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Provider is a fully qualified provider address such as
// registry.opentofu.org/hashicorp/aws.
type Provider = tfaddr.Provider

// Hostname is a registry hostname in its normalized comparison form.
type Hostname = svchost.Hostname

// DefaultRegistryHost is the host assumed when an address names none.
const DefaultRegistryHost = tfaddr.DefaultProviderRegistryHost

// TerraformRegistryHost is the host Terraform assumes when a provider or
// module address names none, where OpenTofu assumes DefaultRegistryHost.
const TerraformRegistryHost Hostname = "registry.terraform.io"

// ParseProvider parses a provider source address with OpenTofu's rules:
// "aws" and "hashicorp/aws" both mean registry.opentofu.org/hashicorp/aws,
// hostnames are normalized, namespaces and types are case-folded. A
// namespace may also hold underscores, as Terraform 1.16 allows
// (ParseNamespace); types may not.
func ParseProvider(s string) (Provider, error) {
	if !utf8.ValidString(s) {
		return Provider{}, fmt.Errorf("invalid provider address %s: not valid UTF-8", excerpt.Quote(s))
	}
	if p, ok, err := parseUnderscoreNamespace(s); ok {
		if err != nil {
			return Provider{}, fmt.Errorf("invalid provider address %s: invalid provider namespace: %w", excerpt.Quote(s), err)
		}
		return p, nil
	}
	p, err := tfaddr.ParseProviderSource(s)
	if err == nil && !p.HasKnownNamespace() {
		// A one-part address names only a type. As in OpenTofu, "terraform"
		// is the built-in provider and anything else is hashicorp/<type>.
		// Parse again: tfaddr skips its type-prefix checks for one part.
		if p.Type == "terraform" {
			return Provider{}, fmt.Errorf("invalid provider address %s: built-in providers are part of the CLI and cannot be mirrored", excerpt.Quote(s))
		}
		p, err = tfaddr.ParseProviderSource("hashicorp/" + p.Type)
	}
	if err != nil {
		return Provider{}, fmt.Errorf("invalid provider address %s: %w", excerpt.Quote(s), excerpt.Error(err))
	}
	if q, err := tfaddr.ParseProviderSource(p.String()); err != nil || !q.Equals(p) {
		// The library lets some punycode-like hostnames ("Xn--", "Xn--.")
		// through as an address that does not parse again.
		return Provider{}, fmt.Errorf("invalid provider address %s: invalid hostname", excerpt.Quote(s))
	}
	if p.IsBuiltIn() {
		return Provider{}, fmt.Errorf("invalid provider address %s: built-in providers are part of the CLI and cannot be mirrored", excerpt.Quote(s))
	}
	if !p.HasKnownNamespace() || p.IsLegacy() {
		return Provider{}, fmt.Errorf("invalid provider address %s: a namespace is required", excerpt.Quote(s))
	}
	return p, nil
}

// HasPort reports whether the provider's hostname includes a port number.
// No client can install such a provider through a network mirror.
func HasPort(p Provider) bool {
	return strings.Contains(string(p.Hostname), ":")
}

// Platform is a target operating system and architecture, as in linux_amd64.
type Platform struct {
	OS   string
	Arch string
}

func (p Platform) String() string { return p.OS + "_" + p.Arch }

// ParsePlatform parses "os_arch". Like OpenTofu it requires exactly one
// underscore and lowercase letters and digits on both sides.
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "_")
	if !ok || strings.Contains(arch, "_") || !isPlatformPart(os) || !isPlatformPart(arch) {
		return Platform{}, fmt.Errorf("invalid platform %s: must be os_arch, such as linux_amd64", excerpt.Quote(s))
	}
	return Platform{OS: os, Arch: arch}, nil
}

func isPlatformPart(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// LessPlatform orders platforms by their string form.
func LessPlatform(a, b Platform) bool { return a.String() < b.String() }

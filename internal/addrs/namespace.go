package addrs

import (
	"errors"
	"strings"

	tfaddr "github.com/opentofu/registry-address/v2"
	"golang.org/x/net/idna"
)

// namespaceLookup is the IDNA profile Terraform 1.16 normalizes provider
// namespaces with: idna.Lookup without the STD3 rules, so that
// underscores pass (hashicorp/terraform-registry-address v0.5.0,
// normalizeProviderNamespace).
var namespaceLookup = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.StrictDomainName(false))

var errNamespace = errors.New("must contain only letters, digits, dashes, and underscores, and may not use leading or trailing dashes or underscores")

// parseUnderscoreNamespace parses a provider source address whose
// namespace holds an underscore, which Terraform 1.16 accepts (private
// registries' organization names) and OpenTofu does not: the namespace
// is checked and normalized by Terraform's rule, the rest of the address
// by OpenTofu's. ok is false for any other address.
func parseUnderscoreNamespace(s string) (p Provider, ok bool, err error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || !strings.Contains(parts[len(parts)-2], "_") {
		return Provider{}, false, nil
	}
	ns, err := ParseNamespace(parts[len(parts)-2])
	if err != nil {
		return Provider{}, true, err
	}
	parts[len(parts)-2] = "x" // a namespace OpenTofu takes, replaced below
	p, err = tfaddr.ParseProviderSource(strings.Join(parts, "/"))
	if err != nil {
		return Provider{}, true, err
	}
	p.Namespace = ns
	return p, true, nil
}

// ParseNamespace checks and normalizes a provider namespace by Terraform
// 1.16's rule (ParseProviderNamespace): at least one character, no dot,
// no two dashes in a row, only ASCII letters, digits, dashes and
// underscores (or non-ASCII letters), no leading or trailing dash or
// underscore, case-folded as a hostname label is.
func ParseNamespace(given string) (string, error) {
	switch {
	case given == "":
		return "", errors.New("must have at least one character")
	case strings.ContainsRune(given, '.'):
		return "", errors.New("dots are not allowed")
	case strings.Contains(given, "--"):
		return "", errors.New("cannot use multiple consecutive dashes")
	case strings.IndexFunc(given, disallowedInNamespace) != -1,
		strings.HasPrefix(given, "_"), strings.HasSuffix(given, "_"):
		return "", errNamespace
	}
	out, err := namespaceLookup.ToUnicode(given)
	if err != nil {
		return "", errNamespace
	}
	return out, nil
}

func disallowedInNamespace(r rune) bool {
	switch {
	case r > 127, r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		return false
	}
	return true
}

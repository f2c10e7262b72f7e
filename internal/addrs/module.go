package addrs

import (
	"fmt"
	"strings"
	"unicode/utf8"

	goversion "github.com/hashicorp/go-version"
	tfaddr "github.com/opentofu/registry-address/v2"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Module is a module package in a module registry, such as
// registry.opentofu.org/terraform-aws-modules/vpc/aws: a host, a
// namespace, a name and a target system. Its String form always names the
// host; ForDisplay leaves out the default one.
type Module = tfaddr.ModulePackage

// DefaultModuleHost is the module registry host assumed when an address
// names none, as in OpenTofu.
const DefaultModuleHost = tfaddr.DefaultModuleRegistryHost

// ParseModule parses a module registry address "[HOST/]NAMESPACE/NAME/SYSTEM"
// with OpenTofu's rules. A "//subdir" suffix is refused: a manifest names
// packages, and a configuration's subdirectory is the caller's to split off
// first (ParseModuleSource).
func ParseModule(s string) (Module, error) {
	m, subdir, err := ParseModuleSource(s)
	if err != nil {
		return Module{}, err
	}
	if subdir != "" {
		return Module{}, fmt.Errorf("invalid module address %s: a module package address has no //subdirectory", excerpt.Quote(s))
	}
	return m, nil
}

// ParseModuleSource parses a module call's registry source address, which
// may end in "//subdir", and returns the package and the subdirectory.
func ParseModuleSource(s string) (Module, string, error) {
	if !utf8.ValidString(s) {
		return Module{}, "", fmt.Errorf("invalid module address %s: not valid UTF-8", excerpt.Quote(s))
	}
	m, err := tfaddr.ParseModuleSource(s)
	if err != nil {
		return Module{}, "", fmt.Errorf("invalid module address %s: %w", excerpt.Quote(s), excerpt.Error(err))
	}
	if strings.Contains(string(m.Package.Host), ":") {
		return Module{}, "", fmt.Errorf("invalid module address %s: a registry host with a port cannot be mirrored", excerpt.Quote(s))
	}
	return m.Package, m.Subdir, nil
}

// MustParseModule is ParseModule for addresses known to be valid: it panics
// on an error.
func MustParseModule(s string) Module { return must(ParseModule(s)) }

// ModuleConstraint is a module call's version constraint, which OpenTofu
// reads with hashicorp/go-version (not the provider constraint syntax).
type ModuleConstraint struct {
	text string
	cons goversion.Constraints
}

// ParseModuleConstraint parses a module version constraint; "" allows
// every version.
func ParseModuleConstraint(s string) (ModuleConstraint, error) {
	c := ModuleConstraint{text: s}
	if s == "" {
		return c, nil
	}
	cons, err := goversion.NewConstraint(s)
	if err != nil {
		return c, fmt.Errorf("version constraint %s: %w", excerpt.Quote(s), excerpt.Error(err))
	}
	c.cons = cons
	return c, nil
}

// Allows reports whether a module call with the constraint may install v,
// by OpenTofu's rule: the constraint holds, and a pre-release only when
// the constraint names that exact version.
func (c ModuleConstraint) Allows(v Version) bool {
	gv, err := goversion.NewVersion(v.String())
	if err != nil {
		return false
	}
	if gv.Prerelease() != "" && !c.namesExactly(gv) {
		return false
	}
	return c.cons.Check(gv)
}

// Holds reports whether the version v, as text, satisfies the constraint
// as OpenTofu checks a module it installed earlier: go-version's check
// alone. A version that does not parse satisfies nothing.
func (c ModuleConstraint) Holds(v string) bool {
	gv, err := goversion.NewVersion(v)
	return err == nil && (c.cons == nil || c.cons.Check(gv))
}

func (c ModuleConstraint) namesExactly(v *goversion.Version) bool {
	for part := range strings.SplitSeq(c.text, ",") {
		part = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(part), "="))
		if w, err := goversion.NewVersion(part); err == nil && w.Equal(v) && w.Prerelease() == v.Prerelease() {
			return true
		}
	}
	return false
}

package addrs

import (
	"fmt"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"
	goversion "github.com/hashicorp/go-version"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Version is a provider release version with OpenTofu's semantics.
type Version = versions.Version

// VersionList is a list of versions.
type VersionList = versions.List

// VersionSet is the set of versions a constraint string allows.
type VersionSet = versions.Set

// ParseVersion parses a release version as OpenTofu does ("1.0" is 1.0.0).
func ParseVersion(s string) (v Version, err error) {
	// go-versions panics on numbers that overflow 64 bits; registries and
	// lock files are outside input, so that must be an error.
	defer func() {
		if recover() != nil {
			v, err = Version{}, fmt.Errorf("invalid version %s: a number is too large", excerpt.Quote(s))
		}
	}()
	v, err = versions.ParseVersion(s)
	if err != nil {
		return Version{}, fmt.Errorf("invalid version %s: %w", excerpt.Quote(s), excerpt.Error(err))
	}
	return v, nil
}

// ParseConstraints parses a version constraint string the way OpenTofu
// parses required_providers versions: it must be valid for
// hashicorp/go-version (which OpenTofu validates with first) and for the
// Ruby-style multi-constraint parser that does the selection. The returned
// set contains released versions only, plus prereleases named exactly.
// An empty string allows every released version.
func ParseConstraints(s string) (VersionSet, error) {
	if s == "" {
		return versions.Released, nil
	}
	if _, err := goversion.NewConstraint(s); err != nil {
		return versions.None, fmt.Errorf("invalid version constraint %s: %w", excerpt.Quote(s), excerpt.Error(err))
	}
	cs, err := constraints.ParseRubyStyleMulti(s)
	if err != nil {
		return versions.None, fmt.Errorf("invalid version constraint %s: %w", excerpt.Quote(s), excerpt.Error(err))
	}
	return versions.MeetingConstraints(cs), nil
}

// MustParseConstraints is ParseConstraints for constants; it panics on an
// invalid constraint.
func MustParseConstraints(s string) VersionSet {
	set, err := ParseConstraints(s)
	if err != nil {
		panic(err)
	}
	return set
}

// CheckGoVersionConstraint validates a constraint with hashicorp/go-version,
// the first of the two parsers OpenTofu applies.
func CheckGoVersionConstraint(s string) error {
	_, err := goversion.NewConstraint(s)
	return err
}

// CompareVersions orders versions lowest first, for slices.SortFunc.
func CompareVersions(a, b Version) int {
	switch {
	case a.LessThan(b):
		return -1
	case b.LessThan(a):
		return 1
	}
	return 0
}

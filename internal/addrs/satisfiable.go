package addrs

import (
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"
	goversion "github.com/hashicorp/go-version"
)

// AllowsNone reports whether the version constraint s allows no version
// at all, as ">= 3.0, < 2.0" or "~> 1.2, >= 2.0" do. OpenTofu and
// Terraform accept such a constraint when they read it and fail only when
// no release matches it; tfmirror says so before asking a registry. An
// invalid or empty constraint is not one that allows none
// (ParseConstraints says what is wrong with an invalid one).
//
// The answer is exact: the terms cut the versions into intervals at their
// boundaries, and a version in an interval's first place (a boundary, or
// the next release after one) is in the set whenever any version of that
// interval is, so trying those is enough.
func AllowsNone(s string) bool {
	if s == "" {
		return false
	}
	specs, err := noPanic(func() (constraints.IntersectionSpec, error) {
		return constraints.ParseRubyStyleMulti(s)
	})
	if err != nil || CheckGoVersionConstraint(s) != nil {
		return false
	}
	set := versions.MeetingConstraints(specs) // as ParseConstraints, parsed once
	for _, v := range witnesses(specs) {
		if set.Has(v) {
			return false
		}
	}
	return true
}

// AllowsNone reports whether the module constraint allows no version at
// all, by the same reasoning as the provider constraints' AllowsNone.
func (c ModuleConstraint) AllowsNone() bool {
	if c.text == "" {
		return false
	}
	var bounds []versions.Version
	for _, one := range c.cons {
		// go-version keeps a term's version to itself; its text is the
		// operator, then the version.
		text := strings.TrimLeft(one.String(), "=!<>~ ")
		v, err := goversion.NewVersion(text)
		if err != nil {
			return false
		}
		seg := v.Segments64()
		bounds = append(bounds, versions.Version{Major: uint64(seg[0]), Minor: uint64(seg[1]), Patch: uint64(seg[2]), Prerelease: versions.VersionExtra(v.Prerelease())})
	}
	for _, v := range successors(bounds) {
		if c.Allows(v) {
			return false
		}
	}
	return true
}

// witnesses are the versions that start the intervals the terms of specs
// cut the versions into (successors of their boundaries).
func witnesses(specs constraints.IntersectionSpec) []versions.Version {
	var bounds []versions.Version
	for _, sel := range specs {
		b := specVersion(sel.Boundary)
		b.Metadata = ""
		bounds = append(bounds, b)
	}
	return successors(bounds)
}

// successors are, for 0.0.0 (which go-versions, as OpenTofu, never counts
// as a release) and each of bounds, the version itself, its release
// without a prerelease part, and the next patch, minor and major releases
// after it (where "~>" terms end).
func successors(bounds []versions.Version) []versions.Version {
	var out []versions.Version
	for _, b := range append([]versions.Version{{}}, bounds...) {
		out = append(out, b,
			versions.Version{Major: b.Major, Minor: b.Minor, Patch: b.Patch},
			versions.Version{Major: b.Major, Minor: b.Minor, Patch: b.Patch + 1},
			versions.Version{Major: b.Major, Minor: b.Minor + 1},
			versions.Version{Major: b.Major + 1},
		)
	}
	return out
}

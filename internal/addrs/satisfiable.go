package addrs

import (
	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"
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
	set, err := ParseConstraints(s)
	if err != nil {
		return false
	}
	specs, err := noPanic(func() (constraints.IntersectionSpec, error) {
		return constraints.ParseRubyStyleMulti(s)
	})
	if err != nil {
		return false
	}
	for _, v := range witnesses(specs) {
		if set.Has(v) {
			return false
		}
	}
	return true
}

// witnesses are the versions that start the intervals the terms of specs
// cut the versions into: for 0.0.0 (which go-versions, as OpenTofu, never
// counts as a release) and every boundary, the boundary itself, its release without a prerelease part, and the next
// patch, minor and major releases after it (where "~>" terms end).
func witnesses(specs constraints.IntersectionSpec) []versions.Version {
	var out []versions.Version
	bounds := []versions.Version{{}}
	for _, sel := range specs {
		b := specVersion(sel.Boundary)
		b.Metadata = ""
		bounds = append(bounds, b)
	}
	for _, b := range bounds {
		out = append(out, b,
			versions.Version{Major: b.Major, Minor: b.Minor, Patch: b.Patch},
			versions.Version{Major: b.Major, Minor: b.Minor, Patch: b.Patch + 1},
			versions.Version{Major: b.Major, Minor: b.Minor + 1},
			versions.Version{Major: b.Major + 1},
		)
	}
	return out
}

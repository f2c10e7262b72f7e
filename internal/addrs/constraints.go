package addrs

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"

	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// NormalizeConstraints combines every version constraint declared for one
// provider (one string per declaration, each possibly a comma-separated
// list) into the normalized string OpenTofu records in the lock file and
// prints in "tofu init" output.
//
// Each string is parsed with OpenTofu's Ruby-style parser. Omitted version
// parts count as zero, so ">= 2" and ">= 2.0.0" are the same term. Distinct
// terms are sorted by their version, then by operator in the order
// > >= = ~>X.Y.Z ~>X.Y <= < !=, and joined with ", ". Every operator is
// followed by a space (none for "="), and versions are written with three
// parts except in "~> X.Y". No terms at all give "".
func NormalizeConstraints(raw []string) (string, error) {
	seen := make(map[constraints.SelectionSpec]bool)
	var terms []constraints.SelectionSpec
	for _, s := range raw {
		specs, err := noPanic(func() (constraints.IntersectionSpec, error) {
			return constraints.ParseRubyStyleMulti(s)
		})
		if err != nil {
			return "", fmt.Errorf("invalid version constraint %s: %w", excerpt.Quote(s), excerpt.Error(err))
		}
		for _, sel := range specs {
			sel.Boundary = sel.Boundary.ConstrainToZero()
			if seen[sel] {
				continue
			}
			seen[sel] = true
			terms = append(terms, sel)
		}
	}
	slices.SortFunc(terms, func(a, b constraints.SelectionSpec) int {
		if c := compareBoundaries(a.Boundary, b.Boundary); c != 0 {
			return c
		}
		return operatorRank(a.Operator) - operatorRank(b.Operator)
	})
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		s, err := formatTerm(t)
		if err != nil {
			return "", err
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", "), nil
}

// compareBoundaries orders two zero-filled version specs by version
// precedence; versions that differ only in build metadata are ordered by
// their metadata so the result is total.
func compareBoundaries(a, b constraints.VersionSpec) int {
	va, vb := specVersion(a), specVersion(b)
	switch {
	case va.Same(vb):
		switch {
		case va.Metadata == vb.Metadata:
			return 0
		case va.Metadata.LessThan(vb.Metadata):
			return -1
		default:
			return 1
		}
	case va.LessThan(vb):
		return -1
	default:
		return 1
	}
}

func specVersion(s constraints.VersionSpec) versions.Version {
	s = s.ConstrainToZero()
	return versions.Version{
		Major:      s.Major.Num,
		Minor:      s.Minor.Num,
		Patch:      s.Patch.Num,
		Prerelease: versions.VersionExtra(s.Prerelease),
		Metadata:   versions.VersionExtra(s.Metadata),
	}
}

// operatorRank is an operator's position among terms with the same version.
func operatorRank(op constraints.SelectionOp) int {
	switch op {
	case constraints.OpGreaterThan:
		return 1
	case constraints.OpGreaterThanOrEqual:
		return 2
	case constraints.OpEqual:
		return 3
	case constraints.OpGreaterThanOrEqualPatchOnly:
		return 4
	case constraints.OpGreaterThanOrEqualMinorOnly:
		return 5
	case constraints.OpLessThanOrEqual:
		return 6
	case constraints.OpLessThan:
		return 7
	case constraints.OpNotEqual:
		return 8
	}
	return 0
}

func formatTerm(t constraints.SelectionSpec) (string, error) {
	var prefix string
	switch t.Operator {
	case constraints.OpEqual:
		prefix = ""
	case constraints.OpNotEqual:
		prefix = "!= "
	case constraints.OpGreaterThan:
		prefix = "> "
	case constraints.OpGreaterThanOrEqual:
		prefix = ">= "
	case constraints.OpLessThan:
		prefix = "< "
	case constraints.OpLessThanOrEqual:
		prefix = "<= "
	case constraints.OpGreaterThanOrEqualPatchOnly, constraints.OpGreaterThanOrEqualMinorOnly:
		prefix = "~> "
	default:
		return "", fmt.Errorf("unsupported version constraint operator %s", t.Operator)
	}
	b := t.Boundary
	version := b.Major.String() + "." + b.Minor.String()
	if t.Operator != constraints.OpGreaterThanOrEqualMinorOnly {
		// Only the minor-pessimistic form ("~> 1.2") drops the patch part.
		version += "." + b.Patch.String()
	}
	if b.Prerelease != "" {
		version += "-" + b.Prerelease
	}
	if b.Metadata != "" {
		version += "+" + b.Metadata
	}
	return prefix + version, nil
}

// noPanic calls parse and turns a panic into an error. The versions library
// panics instead of failing on a version number that overflows uint64.
func noPanic[T any](parse func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, fmt.Errorf("%v", r)
		}
	}()
	return parse()
}

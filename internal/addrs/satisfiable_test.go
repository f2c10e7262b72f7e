package addrs

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apparentlymart/go-versions/versions"
)

func TestAllowsNone(t *testing.T) {
	for _, tc := range []struct {
		constraint string
		none       bool
	}{
		{"", false},
		{">= 3.0, < 2.0", true},
		{">= 2.0, < 2.0", true},
		{"> 2.0.0, <= 2.0.0", true},
		{"> 2.0.0, < 2.0.1", true},
		{"> 2.0.0, < 2.0.2", false},
		{"~> 1.2, >= 2.0", true},
		{"~> 1.2.3, >= 1.3", true},
		{"~> 1.2.3, >= 1.2.9", false},
		{"2.0.0, != 2.0.0", true},
		{"2.0.0, 2.0.1", true},
		{"2.0.0", false},
		{"!= 2.0.0", false},
		{"> 1.0.0-beta, < 1.0.0", true},
		{"1.0.0-beta", false},
		{"1.0.0-beta, < 1.0.0", false},
		{"< 0.0.0", true},
		{"<= 0.0.0", true}, // 0.0.0 is no release to go-versions
		{"< 0.0.1", true},
		{"< 0.0.2", false},
		{"~> 0.1", false},
		{"not a constraint", false},
	} {
		if got := AllowsNone(tc.constraint); got != tc.none {
			t.Errorf("AllowsNone(%q) = %v, want %v", tc.constraint, got, tc.none)
		}
	}
}

// TestAllowsNoneMatchesTheSet holds AllowsNone to the set itself: for
// random constraints over small versions, it says "none" exactly when no
// version of a grid wide enough to hold a witness of every interval is in
// the set.
func TestAllowsNoneMatchesTheSet(t *testing.T) {
	holdToGrid(t, 1, 20000, func(s string) (bool, func(versions.Version) bool, error) {
		set, err := ParseConstraints(s)
		return AllowsNone(s), set.Has, err
	})
}

// TestModuleAllowsNoneMatchesTheVersions is the same for module
// constraints (hashicorp/go-version, prereleases only when named).
func TestModuleAllowsNoneMatchesTheVersions(t *testing.T) {
	holdToGrid(t, 3, 2000, func(s string) (bool, func(versions.Version) bool, error) {
		c, err := ParseModuleConstraint(s)
		return c.AllowsNone(), c.Allows, err
	})
	for s, want := range map[string]bool{"": false, ">= 2.0, < 1.0": true, "~> 1.2, >= 2.0": true, "1.0.0-beta1": false} {
		c, err := ParseModuleConstraint(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.AllowsNone(); got != want {
			t.Errorf("AllowsNone of module constraint %q = %v, want %v", s, got, want)
		}
	}
}

// holdToGrid parses rounds random constraints with parse, which says
// whether AllowsNone calls the constraint empty and how to test a
// version, and fails where the grid of small versions disagrees; a twentieth
// of them at least must allow none, or the test tries too few of those.
func holdToGrid(t *testing.T, seed uint64, rounds int, parse func(string) (bool, func(versions.Version) bool, error)) {
	t.Helper()
	grid := smallVersions()
	ops := []string{"", "= ", "!= ", "> ", ">= ", "< ", "<= ", "~> "}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	nones := 0
	for range rounds {
		s := randomConstraint(rng, ops)
		none, has, err := parse(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if empty := !slices.ContainsFunc(grid, has); none != empty {
			t.Fatalf("AllowsNone of %q is %v, but the grid says %v", s, none, empty)
		}
		if none {
			nones++
		}
	}
	if nones < rounds/20 {
		t.Fatalf("only %d of the %d random constraints allow none: the test does not try enough of them", nones, rounds)
	}
}

// smallVersions are every version up to 4.4.4, and each with a
// prerelease: wide enough to hold a version of every interval the random
// constraints cut.
func smallVersions() []versions.Version {
	var grid []versions.Version
	for major := uint64(0); major <= 4; major++ {
		for minor := uint64(0); minor <= 4; minor++ {
			for patch := uint64(0); patch <= 4; patch++ {
				grid = append(grid, versions.Version{Major: major, Minor: minor, Patch: patch},
					versions.Version{Major: major, Minor: minor, Patch: patch, Prerelease: "beta"})
			}
		}
	}
	return grid
}

// randomConstraint joins one to four random terms over small versions.
func randomConstraint(rng *rand.Rand, ops []string) string {
	term := func() string {
		op := ops[rng.IntN(len(ops))]
		v := fmt.Sprintf("%d.%d", rng.IntN(4), rng.IntN(4))
		if op != "~> " || rng.IntN(2) == 0 {
			v += fmt.Sprintf(".%d", rng.IntN(4))
		}
		if op != "~> " && rng.IntN(6) == 0 {
			v += "-beta"
		}
		return op + v
	}
	terms := make([]string, 1+rng.IntN(4))
	for i := range terms {
		terms[i] = term()
	}
	return strings.Join(terms, ", ")
}

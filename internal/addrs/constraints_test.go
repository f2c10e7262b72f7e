package addrs

import (
	"strings"
	"testing"
)

// Every expected result here was printed by OpenTofu 1.12.6 itself ("Finding
// hashicorp/foo versions matching ...") for a configuration declaring each
// input string in its own module.
func TestNormalizeConstraints(t *testing.T) {
	tests := []struct {
		raw  []string
		want string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"", "  "}, ""},
		{[]string{"~> 1.0"}, "~> 1.0"},
		// Sorted by version first: 1.0.0, then 1.0.5, then 1.1.0.
		{[]string{">= 1.0", "~> 1.1", "!= 1.0.5"}, ">= 1.0.0, != 1.0.5, ~> 1.1"},
		{[]string{">=1.0,!= 1.0.5", "~>1.1, >= 1.0"}, ">= 1.0.0, != 1.0.5, ~> 1.1"},
		{[]string{">= 2.0", ">= 2.0.0"}, ">= 2.0.0"},
		{[]string{"~> 2"}, "~> 2.0"},
		{[]string{"~> 1.2.3"}, "~> 1.2.3"},
		{[]string{"1.0.0"}, "1.0.0"},
		{[]string{"=1.2"}, "1.2.0"},
		{[]string{"1.2.0-beta1"}, "1.2.0-beta1"},
		{[]string{"> 1, < 3"}, "> 1.0.0, < 3.0.0"},
		{[]string{"< 10.0.0, > 9, ~> 9.1"}, "> 9.0.0, ~> 9.1, < 10.0.0"},
		{[]string{"~> 0.1.2, ~> 0.1"}, "~> 0.1, ~> 0.1.2"},
		{[]string{"0.0.1", "0"}, "0.0.0, 0.0.1"},
		// Same version: operator order > >= = ~>X.Y.Z ~>X.Y <= < !=.
		{
			[]string{">= 1.0.0", "!= 1.0.0", "~> 1.0", "~> 1.0.0", "= 1.0.0", "> 1.0.0", "<= 1.0.0", "< 1.0.0"},
			"> 1.0.0, >= 1.0.0, 1.0.0, ~> 1.0.0, ~> 1.0, <= 1.0.0, < 1.0.0, != 1.0.0",
		},
		// Prereleases precede their release; "~> 1.0-beta" keeps two parts.
		{[]string{"~> 1.0-beta", ">= 1.0.0-beta", "1.0.0-alpha", "1.0.0"}, "1.0.0-alpha, >= 1.0.0-beta, ~> 1.0-beta, 1.0.0"},
		{[]string{"~> 1-beta"}, "~> 1.0-beta"},
		{[]string{"1.0.0-beta.2", "1.0.0-beta.10", "1.0.0-beta.a"}, "1.0.0-beta.2, 1.0.0-beta.10, 1.0.0-beta.a"},
		// Build metadata only breaks ties.
		{[]string{">= 1.0.0+b", ">= 1.0.0+a", ">= 1.0.0"}, ">= 1.0.0, >= 1.0.0+a, >= 1.0.0+b"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.raw, "|"), func(t *testing.T) {
			got, err := NormalizeConstraints(tt.raw)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("NormalizeConstraints(%q) = %q, want %q", tt.raw, got, tt.want)
			}
			// The normalized form is a fixed point.
			again, err := NormalizeConstraints([]string{got})
			if err != nil || again != got {
				t.Fatalf("NormalizeConstraints(%q) = %q, %v; not a fixed point", got, again, err)
			}
		})
	}
}

func TestNormalizeConstraintsErrors(t *testing.T) {
	for _, tt := range []struct {
		raw  []string
		want string
	}{
		{[]string{"~> 1.0", "v1.0.0"}, `invalid version constraint "v1.0.0": `},
		{[]string{"=> 1.0"}, `invalid version constraint "=> 1.0": `},
		{[]string{"1.0.0.0"}, `invalid version constraint "1.0.0.0": `},
		{[]string{"~> 1.*"}, `invalid version constraint "~> 1.*": `},
		{[]string{">= 1.0 < 2.0"}, `invalid version constraint ">= 1.0 < 2.0": `},
		{[]string{"1.0 || 2.0"}, `invalid version constraint "1.0 || 2.0": `},
		{[]string{"18446744073709551616"}, `invalid version constraint "18446744073709551616": strconv.ParseUint: `},
	} {
		got, err := NormalizeConstraints(tt.raw)
		if err == nil {
			t.Errorf("NormalizeConstraints(%q) = %q, want an error", tt.raw, got)
			continue
		}
		if !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("NormalizeConstraints(%q) error %q, want prefix %q", tt.raw, err, tt.want)
		}
	}
}

package addrs

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// available is the release list of the verified table in tofu-internals.md
// §7 (the fake registry's hashicorp/foo plus extra prereleases).
var available = []string{"0.9.0", "1.0.0", "1.2.0-beta1", "1.2.0-beta2", "1.2.0", "1.5.0", "2.0.0", "2.1.0-rc1"}

func mustVersionList(t testing.TB, vs []string) VersionList {
	t.Helper()
	var l VersionList
	for _, s := range vs {
		v, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		l = append(l, v)
	}
	return l
}

// List.Filter compacts the matching versions into its receiver's array:
// callers that keep using the list they filtered must filter a copy.
func TestFilterReusesReceiver(t *testing.T) {
	list := mustVersionList(t, available)
	set, err := ParseConstraints("~> 1")
	if err != nil {
		t.Fatal(err)
	}
	filtered := list.Filter(set)
	if &filtered[0] != &list[0] {
		t.Skip("go-versions no longer filters in place")
	}
	if got := list[0].String(); got != "1.0.0" {
		t.Errorf("list[0] after Filter = %s, want 1.0.0 (moved down by Filter)", got)
	}
}

func versionStrings(l VersionList) []string {
	out := []string{}
	for _, v := range l {
		out = append(out, v.String())
	}
	return out
}

func TestParseConstraints(t *testing.T) {
	tests := []struct {
		constraint string
		want       []string
		wantErr    string
	}{
		// The verified table, tofu/terraform column.
		{constraint: "~> 1", want: []string{"1.0.0", "1.2.0", "1.5.0"}},
		{constraint: ">= 1.2.0-beta1", want: []string{"1.2.0", "1.5.0", "2.0.0"}},
		{constraint: "~> 1.2.0-beta1", want: []string{"1.2.0"}},
		{constraint: ">= 2.1.0-rc1", want: []string{}},
		{constraint: "!= 1.5.0", want: []string{"0.9.0", "1.0.0", "1.2.0", "2.0.0"}},
		{constraint: "1.2.0-beta1", want: []string{"1.2.0-beta1"}},
		{constraint: "v1.0.0", wantErr: `a "v" prefix should not be used`},
		{constraint: "", want: []string{"0.9.0", "1.0.0", "1.2.0", "1.5.0", "2.0.0"}},

		// ~> with two parts bumps the major bound, with three the minor.
		{constraint: "~> 1.2", want: []string{"1.2.0", "1.5.0"}},
		{constraint: "~> 1.2.3", want: []string{}},
		{constraint: "~> 1.2.0", want: []string{"1.2.0"}},
		{constraint: "~> 1.0", want: []string{"1.0.0", "1.2.0", "1.5.0"}},
		{constraint: "~> 0.9", want: []string{"0.9.0"}},
		// A bare version is an exact match; "1" is exactly 1.0.0.
		{constraint: "1", want: []string{"1.0.0"}},
		{constraint: "1.2", want: []string{"1.2.0"}},
		{constraint: "= 1.5.0", want: []string{"1.5.0"}},
		{constraint: "= 1.2.0-beta2", want: []string{"1.2.0-beta2"}},
		{constraint: "3.0.0", want: []string{}},
		// Several constraints intersect; prereleases stay out unless named.
		{constraint: ">= 1.0, < 2.0", want: []string{"1.0.0", "1.2.0", "1.5.0"}},
		{constraint: ">=1.0.0,!= 1.0.0", want: []string{"1.2.0", "1.5.0", "2.0.0"}},
		{constraint: ">= 1.0.0, != 1.0.5, ~> 1.1", want: []string{"1.2.0", "1.5.0"}},
		{constraint: "> 1.2.0-beta1", want: []string{"1.2.0", "1.5.0", "2.0.0"}},
		{constraint: "< 1.2.0", want: []string{"0.9.0", "1.0.0"}},
		{constraint: "<= 2.1.0-rc1", want: []string{"0.9.0", "1.0.0", "1.2.0", "1.5.0", "2.0.0"}},
		{constraint: "1.2.0-beta1, 1.2.0-beta2", want: []string{}},

		// Errors.
		{constraint: "garbage", wantErr: "invalid version constraint"},
		{constraint: ">= 1.0 <", wantErr: "invalid version constraint"},
		{constraint: "~>", wantErr: "invalid version constraint"},
		{constraint: ">= 1.0,", wantErr: "invalid version constraint"},
		{constraint: "1.0.0.0", wantErr: "invalid version constraint"},
		{constraint: "=> 1.0", wantErr: "invalid version constraint"},
	}
	for _, tt := range tests {
		t.Run(tt.constraint, func(t *testing.T) {
			// List.Filter reuses its receiver's array, so every case
			// filters a fresh list.
			list := mustVersionList(t, available)
			set, err := ParseConstraints(tt.constraint)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseConstraints(%q) = %v, want error containing %q", tt.constraint, set, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.constraint) {
					t.Errorf("ParseConstraints(%q) error = %q, want it to contain %q and the constraint", tt.constraint, err, tt.wantErr)
				}
				if got := list.Filter(set); len(got) != 0 {
					t.Errorf("ParseConstraints(%q) error set allows %v, want nothing", tt.constraint, versionStrings(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseConstraints(%q): %v", tt.constraint, err)
			}
			got := versionStrings(list.Filter(set))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConstraints(%q) allows (-want +got):\n%s", tt.constraint, diff)
			}
		})
	}
}

// Selection is the newest allowed version by semver precedence (§7).
func TestConstraintSelection(t *testing.T) {
	for constraint, want := range map[string]string{
		">= 1.2.0-beta1": "2.0.0",
		"1.2.0-beta1":    "1.2.0-beta1",
		"~> 1":           "1.5.0",
		"":               "2.0.0",
	} {
		set, err := ParseConstraints(constraint)
		if err != nil {
			t.Fatal(err)
		}
		list := mustVersionList(t, available)
		if got := list.NewestInSet(set).String(); got != want {
			t.Errorf("NewestInSet(%q) = %s, want %s", constraint, got, want)
		}
		if got := list.Filter(set).Newest().String(); got != want {
			t.Errorf("newest allowed by %q = %s, want %s", constraint, got, want)
		}
	}
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "1.0.0", want: "1.0.0"},
		{in: "1.0", want: "1.0.0"},
		{in: "1", want: "1.0.0"},
		{in: "01.0.0", want: "1.0.0"},
		{in: "1.2.0-Beta1", want: "1.2.0-Beta1"},
		{in: "1.0.0+meta", want: "1.0.0+meta"},
		{in: "1.10.0", want: "1.10.0"},
		{in: "v1.0.0", wantErr: true},
		{in: "", wantErr: true},
		{in: "1.0.0.0", wantErr: true},
		{in: "one", wantErr: true},
		{in: " 1.0.0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			v, err := ParseVersion(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Errorf("ParseVersion(%q) = %s, want error", tt.in, v)
				} else if !strings.Contains(err.Error(), "invalid version") {
					t.Errorf("ParseVersion(%q) error = %q, want it to say invalid version", tt.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseVersion(%q): %v", tt.in, err)
			}
			if got := v.String(); got != tt.want {
				t.Errorf("ParseVersion(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseVersionOverflowIsAnError(t *testing.T) {
	if _, err := ParseVersion("20000000000000000000.0.0"); err == nil {
		t.Error("a version number that overflows 64 bits was accepted")
	}
}

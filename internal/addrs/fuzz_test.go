package addrs

import (
	"strings"
	"testing"
)

// FuzzParseProvider checks that ParseProvider never panics and that every
// address it accepts is complete, mirrorable and stable under re-parsing
// of its String form.
func FuzzParseProvider(f *testing.F) {
	for _, seed := range []string{
		"aws", "hashicorp/aws", "Registry.OpenTofu.org/HashiCorp/AWS",
		"example.com:443/a/b", "localhost:08443/a/b", "bücher.example/ns/foo",
		"xn--bcher-kva.example/a/b", "terraform", "terraform.io/builtin/terraform",
		"-/aws", "?/aws", "a--b/c", "my_org/aws", "ex.com/A_Ü_b/c", "a/b/c/d", "NS/Tÿpe", "terraform-provider-aws", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProvider(s)
		if err != nil {
			if !p.IsZero() {
				t.Fatalf("ParseProvider(%q) returned %#v with error %v", s, p, err)
			}
			return
		}
		if p.Hostname == "" || p.Namespace == "" || p.Type == "" {
			t.Fatalf("ParseProvider(%q) = %#v, an incomplete address", s, p)
		}
		if p.IsBuiltIn() || p.IsLegacy() || !p.HasKnownNamespace() {
			t.Fatalf("ParseProvider(%q) = %#v, which cannot be mirrored", s, p)
		}
		if strings.Contains(p.Namespace+p.Type, "/") {
			t.Fatalf("ParseProvider(%q) = %#v has a slash in a path element", s, p)
		}
		again, err := ParseProvider(p.String())
		if err != nil {
			t.Fatalf("ParseProvider(%q) = %s, which does not parse again: %v", s, p, err)
		}
		if again != p {
			t.Fatalf("ParseProvider(%q) = %#v, re-parsed as %#v", s, p, again)
		}
	})
}

// FuzzParsePlatform checks that ParsePlatform never panics and that what
// it accepts prints back to the same string.
func FuzzParsePlatform(f *testing.F) {
	for _, seed := range []string{"linux_amd64", "linux", "linux_amd_64", "Linux_amd64", "_amd64", "linux_", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlatform(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("ParsePlatform(%q).String() = %q", s, p.String())
		}
		if p.OS == "" || p.Arch == "" || strings.Contains(p.OS+p.Arch, "_") {
			t.Fatalf("ParsePlatform(%q) = %#v", s, p)
		}
	})
}

// FuzzParseConstraints checks that ParseConstraints never panics and that
// a prerelease is only ever allowed when the constraint names it.
func FuzzParseConstraints(f *testing.F) {
	for _, seed := range []string{
		"~> 1", ">= 1.2.0-beta1", "~> 1.2.0-beta1", ">= 2.1.0-rc1", "!= 1.5.0",
		"1.2.0-beta1", "v1.0.0", "", "~> 1.2", "1", ">= 1.0, < 2.0", "garbage", "=> 1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		set, err := ParseConstraints(s)
		if err != nil {
			return
		}
		for _, v := range mustVersionList(t, available) {
			if set.Has(v) && v.Prerelease != "" && !strings.Contains(s, string(v.Prerelease)) {
				t.Fatalf("ParseConstraints(%q) allows prerelease %s it does not name", s, v)
			}
		}
	})
}

// FuzzNormalizeConstraints checks that the normalized form never panics,
// parses again and is a fixed point.
func FuzzNormalizeConstraints(f *testing.F) {
	for _, seed := range []string{
		"~> 1.0", ">= 1.0, ~> 1.1, != 1.0.5", "~> 2", "1.2.0-beta1", "> 1, < 3",
		"~> 1-beta", ">= 1.0.0+b, 1.0.0+a", "0", "=1.2", "v1", "1.*", "",
	} {
		f.Add(seed, "~> 1.1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		got, err := NormalizeConstraints([]string{a, b})
		if err != nil {
			return
		}
		again, err := NormalizeConstraints([]string{got})
		if err != nil {
			t.Fatalf("normalized %q does not parse: %v", got, err)
		}
		if again != got {
			t.Fatalf("normalizing %q gave %q", got, again)
		}
		swapped, err := NormalizeConstraints([]string{b, a})
		if err != nil || swapped != got {
			t.Fatalf("order matters: %q then %q", got, swapped)
		}
	})
}

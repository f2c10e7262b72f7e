package addrs

import (
	"strings"
	"testing"
)

// TestUnderscoreNamespaces: Terraform 1.16's namespace rule, exactly:
// underscores inside a namespace, never leading or trailing, never in a
// type; other characters as before.
func TestUnderscoreNamespaces(t *testing.T) {
	good := map[string]string{
		"my_org/aws":                        "registry.opentofu.org/my_org/aws",
		"app.example.com/My_Org/aws":        "app.example.com/my_org/aws",
		"example.com/a_b_c-d/thing":         "example.com/a_b_c-d/thing",
		"example.com/a__b/thing":            "example.com/a__b/thing",
		"example.com/a_-b/thing":            "example.com/a_-b/thing",
		"registry.terraform.io/org_1/cloud": "registry.terraform.io/org_1/cloud",
	}
	for in, want := range good {
		p, err := ParseProvider(in)
		if err != nil {
			t.Errorf("ParseProvider(%q): %v", in, err)
			continue
		}
		if p.String() != want {
			t.Errorf("ParseProvider(%q) = %s, want %s", in, p, want)
		}
		if q, err := ParseProvider(p.String()); err != nil || q != p {
			t.Errorf("ParseProvider(%q) does not parse again: %v", p, err)
		}
	}
	bad := map[string]string{
		"_org/aws":              "leading or trailing dashes or underscores",
		"org_/aws":              "leading or trailing dashes or underscores",
		"my_org/a_ws":           "",
		"my_org/aws_":           "",
		"a_b--c/aws":            "consecutive dashes",
		"a_b$c/aws":             "only letters, digits, dashes, and underscores",
		"a_b c/aws":             "only letters, digits, dashes, and underscores",
		"h:99999999/a_b/c":      "",
		"x/y/a_b/c":             "",
		"example.com/-a_b/aws":  "",
		"example.com/a_b-/aws":  "",
		"example.com/a_b.c/aws": "",
	}
	for in, want := range bad {
		_, err := ParseProvider(in)
		if err == nil {
			t.Errorf("ParseProvider(%q): no error", in)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ParseProvider(%q): %v, want it to say %q", in, err, want)
		}
	}
}

package addrs

import "testing"

func TestParseModule(t *testing.T) {
	for in, want := range map[string]string{
		"terraform-aws-modules/vpc/aws":                       "registry.opentofu.org/terraform-aws-modules/vpc/aws",
		"registry.terraform.io/terraform-aws-modules/vpc/aws": "registry.terraform.io/terraform-aws-modules/vpc/aws",
		"Example.COM/ns/name/sys":                             "example.com/ns/name/sys",
	} {
		m, err := ParseModule(in)
		if err != nil {
			t.Fatalf("ParseModule(%q): %v", in, err)
		}
		if m.String() != want {
			t.Errorf("ParseModule(%q) = %s, want %s", in, m, want)
		}
	}
	for _, bad := range []string{"", "vpc/aws", "a/b/c//sub", "./local", "git::https://x/y", "example.com:8443/a/b/c", "a/b/c/d/e", "\xff/b/c"} {
		if _, err := ParseModule(bad); err == nil {
			t.Errorf("ParseModule(%q) accepted", bad)
		}
	}
	m, sub, err := ParseModuleSource("hashicorp/consul/aws//modules/cluster")
	if err != nil || m.String() != "registry.opentofu.org/hashicorp/consul/aws" || sub != "modules/cluster" {
		t.Fatalf("ParseModuleSource = %v %q %v", m, sub, err)
	}
}

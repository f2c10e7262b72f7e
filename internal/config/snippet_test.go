package config

import (
	"strings"
	"testing"
)

// TestCheckInstallationSnippet holds a bundle's CLI configuration snippet
// to what bundle create writes: provider_installation blocks, and host
// blocks whose services all point below the placeholder; anything an
// operator would not expect to copy into a client's configuration is
// refused, naming what.
func TestCheckInstallationSnippet(t *testing.T) {
	const prefix = "https://MIRROR.EXAMPLE/"
	const path = "/PATH/TO/MIRROR"
	cases := []struct {
		name, src, prefix, want string // want: "" to accept, else part of the error
	}{
		{"network mirror", "# comment\nprovider_installation {\n  network_mirror {\n    url = \"https://MIRROR.EXAMPLE/\"\n    trust_all_hashes = true\n  }\n}\n", prefix, ""},
		{"filesystem mirror", "provider_installation {\n  filesystem_mirror { path = \"/PATH/TO/MIRROR\" }\n}\n", prefix, ""},
		{"network mirror elsewhere", "provider_installation {\n  network_mirror { url = \"https://evil.example/\" }\n}\n", prefix, "network_mirror: its url is not the placeholder"},
		{"filesystem mirror elsewhere", "provider_installation {\n  filesystem_mirror { path = \"/tmp/evil\" }\n}\n", prefix, "filesystem_mirror: its path is not the placeholder"},
		{"direct", "provider_installation {\n  direct {}\n}\n", prefix, `provider_installation holds a "direct" block`},
		{"mirror with include", "provider_installation {\n  network_mirror {\n    url = \"https://MIRROR.EXAMPLE/\"\n    include = [\"x/y/z\"]\n  }\n}\n", prefix, `network_mirror holds "include"`},
		{"module host", "host \"registry.opentofu.org\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/replica/registry.opentofu.org/v1/modules/\" }\n}\n", prefix, ""},
		{"two services", "host \"h.example\" {\n  services = {\n    \"modules.v1\" = \"https://MIRROR.EXAMPLE/a/\"\n    \"providers.v1\" = \"https://MIRROR.EXAMPLE/b/\"\n  }\n}\n", prefix, ""},
		{"host without a prefix", "host \"registry.opentofu.org\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/x/\" }\n}\n", "", `holds a "host" block`},
		{"service elsewhere", "host \"registry.opentofu.org\" {\n  services = { \"modules.v1\" = \"https://evil.example/v1/modules/\" }\n}\n", prefix, `service "modules.v1" points outside`},
		{"prefix as a host part", "host \"h\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE.evil.example/\" }\n}\n", prefix, "points outside"},
		{"service not a string", "host \"h\" {\n  services = { \"modules.v1\" = [\"https://MIRROR.EXAMPLE/\"] }\n}\n", prefix, "written as plain strings"},
		// HCL 1, which the clients read CLI configurations with, starts an
		// interpolation at "$${" that runs on into what HCL 2 reads as a
		// comment: Terraform would read a direct block here.
		{"a string HCL 1 reads on", "provider_installation {\n  network_mirror {\n    url = \"https://MIRROR.EXAMPLE/\"\n    trust_all_hashes = \"$${{{{\"\n  }\n}\n# }}\" } direct {} }\n", prefix, "trust_all_hashes is not the bare word"},
		{"an escaped interpolation in the url", "provider_installation {\n  network_mirror { url = \"https://MIRROR.EXAMPLE/$${x}\" }\n}\n", prefix, "its url is not the placeholder"},
		{"an interpolation in a service", "host \"h\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/${\"x\"}\" }\n}\n", prefix, "written as plain strings"},
		{"an escaped interpolation in a service", "host \"h\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/$${x}\" }\n}\n", prefix, "written as plain strings"},
		{"trust_all_hashes as a string", "provider_installation {\n  network_mirror {\n    url = \"https://MIRROR.EXAMPLE/\"\n    trust_all_hashes = \"true\"\n  }\n}\n", prefix, "trust_all_hashes is not the bare word"},
		{"a host name with an interpolation", "host \"h$${x}\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/\" }\n}\n", prefix, "the host name is not written as a plain string"},
		{"services from a function", "host \"h\" {\n  services = tomap({ \"modules.v1\" = \"https://MIRROR.EXAMPLE/\" })\n}\n", prefix, "not a literal map"},
		{"services from a variable", "host \"h\" {\n  services = var.s\n}\n", prefix, "not a literal map"},
		{"host with more", "host \"h\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/\" }\n  token = \"x\"\n}\n", prefix, `host "h": a snippet's host block holds only services`},
		{"host with a block", "host \"h\" {\n  services = { \"modules.v1\" = \"https://MIRROR.EXAMPLE/\" }\n  client { id = \"x\" }\n}\n", prefix, "holds only services"},
		{"host without a label", "host {\n  services = {}\n}\n", prefix, "a host block: a snippet's host block holds only services"},
		{"credentials", "credentials \"registry.opentofu.org\" {\n  token = \"x\"\n}\n", prefix, `holds a "credentials" block`},
		{"attribute", "plugin_cache_dir = \"/tmp\"\n", prefix, "holds attributes"},
		{"not HCL", "provider_installation {\n", prefix, "not a CLI configuration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckInstallationSnippet([]byte(c.src), "x.tfrc", Placeholders{URL: c.prefix, Path: path})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("accepted; want an error with %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("error %q; want it to say %q", err, c.want)
			}
		})
	}
}

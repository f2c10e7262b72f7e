package bundle

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
)

// hostBlockRe is a host block as replica.ServicesBlock writes one with
// a single service.
var hostBlockRe = regexp.MustCompile(`host "([^"]+)" \{\n  services = \{ "modules\.v1" = "([^"]+)" \}\n\}`)

// moduleHosts reads a snippet's host blocks: host → modules.v1 URL. (The
// check import applies holds the snippet to HCL and to host blocks alone.)
func moduleHosts(t *testing.T, src []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range hostBlockRe.FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = m[2]
	}
	if n := strings.Count(string(src), "\nhost "); n != len(out) {
		t.Errorf("%d host blocks, %d of them read\n%s", n, len(out), src)
	}
	return out
}

// TestModuleSnippets gives a bundle that holds modules a CLI configuration
// snippet per client pointing each module host's modules.v1 at the
// imported mirror's replica of it; Terraform's also answers for
// registry.terraform.io, which it reads a host-less module address as,
// unless the bundle holds modules of that host. A bundle without modules
// has none, and every snippet passes the check import applies.
func TestModuleSnippets(t *testing.T) {
	providers := []addrs.Provider{addrs.MustParseProvider("hashicorp/aws")}
	if got := slices.Sorted(maps.Keys(cliConfigSnippets(providers, nil))); !slices.Equal(got, slices.Sorted(slices.Values(providerSnippets))) {
		t.Errorf("a bundle without modules has snippets %v", got)
	}
	mod := func(s string) addrs.Module {
		m, err := addrs.ParseModule(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	const replica = URLPlaceholder + "replica/"
	cases := []struct {
		name            string
		modules         []addrs.Module
		tofu, terraform map[string]string
		saying          string // in Terraform's snippet
	}{
		{
			name:    "the default host and another",
			modules: []addrs.Module{mod("acme/net/aws"), mod("acme/sub/aws"), mod("modules.example.com/x/y/z")},
			tofu: map[string]string{
				"registry.opentofu.org": replica + "registry.opentofu.org/v1/modules/",
				"modules.example.com":   replica + "modules.example.com/v1/modules/",
			},
			terraform: map[string]string{
				"registry.opentofu.org": replica + "registry.opentofu.org/v1/modules/",
				"modules.example.com":   replica + "modules.example.com/v1/modules/",
				"registry.terraform.io": replica + "registry.opentofu.org/v1/modules/",
			},
		},
		{
			name:      "registry.terraform.io's own modules",
			modules:   []addrs.Module{mod("acme/net/aws"), mod("registry.terraform.io/acme/net/aws")},
			tofu:      map[string]string{"registry.opentofu.org": replica + "registry.opentofu.org/v1/modules/", "registry.terraform.io": replica + "registry.terraform.io/v1/modules/"},
			saying:    "write\n# registry.opentofu.org/ in the sources",
			terraform: map[string]string{"registry.opentofu.org": replica + "registry.opentofu.org/v1/modules/", "registry.terraform.io": replica + "registry.terraform.io/v1/modules/"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := cliConfigSnippets(providers, c.modules)
			for name, data := range files {
				if err := config.CheckInstallationSnippet(data, name, config.Placeholders{URL: URLPlaceholder, Path: PathPlaceholder}); err != nil {
					t.Errorf("%s: refused by import's check: %v", name, err)
				}
			}
			if !strings.Contains(string(files["terraform-modules.tfrc"]), c.saying) {
				t.Errorf("Terraform's snippet does not say %q:\n%s", c.saying, files["terraform-modules.tfrc"])
			}
			for name, want := range map[string]map[string]string{"tofu-modules.tfrc": c.tofu, "terraform-modules.tfrc": c.terraform} {
				if got := moduleHosts(t, files[name]); !maps.Equal(got, want) {
					t.Errorf("%s points modules.v1 of %v; want %v\n%s", name, got, want, files[name])
				}
			}
		})
	}
}

// TestImportRefusesAModuleSnippetPointingElsewhere: a bundle's module
// snippet whose service points anywhere but the placeholder is refused,
// as is one under another name.
func TestImportRefusesAModuleSnippetPointingElsewhere(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := cliConfigSnippets(nil, []addrs.Module{{Host: addrs.DefaultModuleHost, Namespace: "a", Name: "b", TargetSystem: "c"}})["tofu-modules.tfrc"]
	if err := checkSnippet(write("tofu-modules.tfrc", string(good)), "cli-config/tofu-modules.tfrc"); err != nil {
		t.Fatalf("the snippet create writes is refused: %v", err)
	}
	evil := strings.ReplaceAll(string(good), URLPlaceholder, "https://attacker.example/")
	err := checkSnippet(write("tofu-modules.tfrc", evil), "cli-config/tofu-modules.tfrc")
	if err == nil || !strings.Contains(err.Error(), "points outside "+URLPlaceholder) {
		t.Errorf("a snippet sending modules to another host: %v; want it refused", err)
	}
	err = checkSnippet(write("modules.tfrc", string(good)), "cli-config/modules.tfrc")
	if err == nil || !strings.Contains(err.Error(), "not a CLI configuration snippet bundle create writes") {
		t.Errorf("a snippet under another name: %v; want it refused", err)
	}
}

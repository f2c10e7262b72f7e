package tfconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Read as Terraform reads it, a configuration has no .tofu files and its
// sources without a host are registry.terraform.io's; read as OpenTofu
// reads it (the default), .tofu files count and those sources are
// registry.opentofu.org's.
func TestTerraformReading(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"main.tf":    "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \"~> 5.0\" }\n  }\n}\n",
		"extra.tofu": "resource \"extra_thing\" \"x\" {\n  provider = extra\n}\nprovider \"extra\" {}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		terraform bool
		want      []string
	}{
		{false, []string{"registry.opentofu.org/hashicorp/aws", "registry.opentofu.org/hashicorp/extra"}},
		{true, []string{"registry.terraform.io/hashicorp/aws"}},
	} {
		cfgs, err := LoadConfigurations([]string{dir}, Options{Terraform: c.terraform})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range cfgs[0].Needs {
			got = append(got, n.Provider.String())
			if n.Provider == addrs.MustParseProvider("registry.terraform.io/hashicorp/aws") && !n.ImpliedHost {
				t.Errorf("terraform: %s is not marked as named without a host", n.Provider)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("terraform %v: needs %v, want %v", c.terraform, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("terraform %v: needs %v, want %v", c.terraform, got, c.want)
			}
		}
	}
}

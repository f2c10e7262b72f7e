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

// A root named through a symbolic link reaches a module above it as
// "tofu -chdir" does: up from the root's real directory, not up the
// link's path.
func TestLocalModuleAboveALinkedRoot(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"live/prod/app/main.tf":    "module \"net\" {\n  source = \"../../modules/net\"\n}\n",
		"live/modules/net/main.tf": "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \"~> 5.0\" }\n  }\n}\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "live", "prod"), filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	r, err := Load(from(t, dir, filepath.Join("lnk", "app")))
	if err != nil {
		t.Fatalf("Load through the link: %v", err)
	}
	got := byAddress(r)["registry.opentofu.org/hashicorp/aws"]
	if len(got) != 1 || got[0].Pos != "live/modules/net/main.tf:3" {
		t.Errorf("aws constraints %v, want one at live/modules/net/main.tf:3", got)
	}
}

package tfconfig

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/lockfile"
)

// TestUnderscoreNamespaceEverywhere: a namespace with an underscore, as
// Terraform 1.16 accepts for private registries, is taken in a manifest's
// provider block, a configuration's required_providers and a lock file;
// one with a leading underscore is refused in each.
func TestUnderscoreNamespaceEverywhere(t *testing.T) {
	const addr = "app.example.com/my_org/cloud"
	dir := writeTree(t, map[string]string{
		"root/main.tf":             "terraform {\n  required_providers {\n    cloud = {\n      source  = \"app.example.com/My_Org/cloud\"\n      version = \"~> 1.0\"\n    }\n  }\n}\n",
		"root/.terraform.lock.hcl": "provider \"" + addr + "\" {\n  version = \"1.0.0\"\n}\n",
		"bad/main.tf":              "terraform {\n  required_providers {\n    cloud = { source = \"app.example.com/_org/cloud\" }\n  }\n}\n",
	})
	r, err := Load(from(t, dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]Constraint{addr: cs("~> 1.0", "root/main.tf:5")}, byAddress(r)); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	if _, err := Load(filepath.Join(dir, "bad")); err == nil {
		t.Error("a namespace with a leading underscore was taken")
	}

	lock, err := lockfile.Read(filepath.Join(dir, "root", lockfile.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if len(lock.Locks) != 1 {
		t.Errorf("lock file: %v", lock.Locks)
	}
	for p := range lock.Locks {
		if p.String() != addr {
			t.Errorf("lock file provider %s, want %s", p, addr)
		}
	}
	if _, err := lockfile.Parse([]byte("provider \"example.com/org_/x\" {\n  version = \"1.0.0\"\n}\n"), "x.hcl"); err == nil {
		t.Error("a lock file with a trailing underscore in a namespace was taken")
	}

	m, err := config.Parse([]byte("provider \""+addr+"\" {\n  versions = \"1.0.0\"\n  platforms = [\"linux_amd64\"]\n}\n"), "mirror.hcl")
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if len(m.Requirements) != 1 || m.Requirements[0].Provider.String() != addr {
		t.Errorf("manifest requirements %+v", m.Requirements)
	}
	if _, err := config.Parse([]byte("provider \"example.com/my_org/a_b\" {\n  versions = \"1.0.0\"\n}\n"), "mirror.hcl"); err == nil {
		t.Error("a manifest provider with an underscore in its type was taken")
	}
}

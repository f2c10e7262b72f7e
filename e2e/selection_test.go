package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// selectionVersions are the releases of the provider the selection table
// is evaluated against (the table in notes/tofu-internals.md §7, extended).
var selectionVersions = []string{"0.9.0", "1.0.0", "1.2.0-beta1", "1.2.0-beta2", "1.2.0", "1.5.0", "2.0.0", "2.1.0-rc1"}

// TestVersionSelectionTableMatchesTofu checks every row twice in the same
// run: real "tofu init" against the origin must select the expected
// version (or fail when none matches), and "tfmirror build" of the same
// configuration must mirror exactly that version (or exit 2).
func TestVersionSelectionTableMatchesTofu(t *testing.T) {
	const none = "none"
	table := []struct {
		constraint string
		want       string // "" means no release matches; none, no version can
	}{
		{"~> 1", "1.5.0"},
		{"~> 1.2", "1.5.0"},
		{"~> 1.2.0", "1.2.0"},
		{"~> 0", "0.9.0"},
		{"~> 2.0", "2.0.0"},
		{"1", "1.0.0"},
		{">= 1.2.0-beta1", "2.0.0"},
		{"~> 1.2.0-beta1", "1.2.0"},
		{"1.2.0-beta1", "1.2.0-beta1"},
		{"2.1.0-rc1", "2.1.0-rc1"},
		{">= 2.1.0-rc1", ""},
		{"!= 2.0.0", "1.5.0"},
		{"< 1.0.0", "0.9.0"},
		{">= 1.0.0, < 1.5.0", "1.2.0"},
		{"> 2.0.0", ""},
		// Constraints no version can meet: tofu finds no release, and
		// tfmirror refuses them before asking the registry.
		{">= 2.0.0, < 1.0.0", none},
		{"~> 1.2, >= 2.0", none},
	}
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	plat := hostPlatform()
	for _, v := range selectionVersions {
		reg.Add("hashicorp", "sel", v, plat)
	}
	env := caFileEnv(t, ca)
	hosts := fmt.Sprintf("host \"registry.opentofu.org\" {\n  services = { \"providers.v1\" = %q }\n}\n", reg.ServicesURL)
	manifest := filepath.Join(t.TempDir(), "mirror.hcl")
	writeFile(t, manifest, hosts)
	tofu := tofuBin(t)

	for _, row := range table {
		t.Run(row.constraint, func(t *testing.T) {
			config := fmt.Sprintf(`terraform {
  required_providers {
    sel = {
      source  = "hashicorp/sel"
      version = %q
    }
  }
}
`, row.constraint)
			dir, root := t.TempDir(), t.TempDir() // tfmirror's copy, tofu's copy
			writeFile(t, filepath.Join(dir, "main.tf"), config)
			writeFile(t, filepath.Join(root, "main.tf"), config)
			out, err := runTofu(t, tofu, root, hosts, env, "init", "-input=false", "-backend=false")
			matches := row.want != "" && row.want != none
			switch {
			case !matches && err == nil:
				t.Errorf("tofu selected something for %q, want no match:\n%s", row.constraint, out)
			case matches && err != nil:
				t.Fatalf("tofu init: %v\n%s", err, out)
			case matches:
				if got := lockVersions(t, filepath.Join(root, ".terraform.lock.hcl"))["registry.opentofu.org/hashicorp/sel"]; got != row.want {
					t.Errorf("tofu selected %s, the table says %s", got, row.want)
				}
			}

			work := t.TempDir()
			_, stderr, code := runTfmirror(t, work, env, "build", dir, "--config", manifest, "--platform", plat, "--out", "site")
			if !matches {
				says := "no released version matches"
				if row.want == none {
					says = "allows no version"
				}
				if code != 2 || !strings.Contains(stderr, says) {
					t.Errorf("tfmirror: exit %d, want 2 naming the unmatched constraint:\n%s", code, stderr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("tfmirror build: exit %d\n%s", code, stderr)
			}
			data, err := os.ReadFile(filepath.Join(work, "site", "registry.opentofu.org", "hashicorp", "sel", "index.json"))
			if err != nil {
				t.Fatal(err)
			}
			var idx struct{ Versions map[string]any }
			if err := json.Unmarshal(data, &idx); err != nil {
				t.Fatal(err)
			}
			if len(idx.Versions) != 1 || idx.Versions[row.want] == nil {
				t.Errorf("tfmirror mirrored %v, want exactly %s", idx.Versions, row.want)
			}
		})
	}
}

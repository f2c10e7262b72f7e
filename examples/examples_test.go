// Package examples holds sample manifests, configurations and client
// configurations; its tests keep them valid.
package examples

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
)

func TestManifestsParse(t *testing.T) {
	for _, name := range []string{"mirror.hcl", "private-registry.hcl"} {
		t.Run(name, func(t *testing.T) {
			m, err := config.Load(filepath.Join(".", name))
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Requirements) == 0 {
				t.Error("no requirements")
			}
		})
	}
}

// TestMonorepoExample checks what examples/monorepo/README.md says.
func TestMonorepoExample(t *testing.T) {
	m, err := config.Load(filepath.Join("monorepo", "mirror.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var roots []string
	for _, dir := range m.Configurations {
		roots = append(roots, filepath.Base(dir))
	}
	if !slices.Equal(roots, []string{"app", "network"}) {
		t.Fatalf("configuration blocks select %q", roots)
	}
	want := map[string]map[string][]string{
		"network": {"registry.opentofu.org/hashicorp/aws": {"~> 5.80"}},
		"app": {
			"registry.opentofu.org/hashicorp/aws": {">= 5.0.0", "< 6.0.0"},
			"registry.opentofu.org/hashicorp/tls": nil,
		},
	}
	for _, dir := range m.Configurations {
		root, err := tfconfig.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for p, cs := range root.Providers {
			var texts []string
			for _, c := range cs {
				texts = append(texts, c.Text)
			}
			got[p.String()] = texts
		}
		w := want[filepath.Base(dir)]
		if len(got) != len(w) {
			t.Errorf("%s: providers %v, want %v", dir, got, w)
		}
		for p, texts := range w {
			if !slices.Equal(got[p], texts) {
				t.Errorf("%s: %s constraints %q, want %q", dir, p, got[p], texts)
			}
		}
	}
}

package config_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
)

func TestOutBlocks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mirror.hcl")
	writeFile(t, path, `
out = [
  "site",
  "/srv/mirror",
  "s3://bucket/providers/",
  "oci://registry.example.com/tf/${hostname}/${namespace}/${type}",
]
`)
	m, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "site"), "/srv/mirror", "s3://bucket/providers/",
		"oci://registry.example.com/tf/${hostname}/${namespace}/${type}",
	}
	if !slices.Equal(m.Outs, want) {
		t.Errorf("Outs = %q; want %q", m.Outs, want)
	}
}

func TestOutBlockErrors(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"duplicate":    {`out = ["site", "./site"]`, "Duplicate destination"},
		"empty string": {`out = [""]`, "Empty destination"},
		"empty list":   {`out = []`, "No destination"},
		"not a list":   {`out = 3`, "list"},
		"unknown var":  {`out = ["oci://r.example.com/${owner}/${type}"]`, "owner"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mirror.hcl")
			writeFile(t, path, tc.text)
			_, err := config.Load(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load: %v; want an error mentioning %q", err, tc.want)
			}
		})
	}
}

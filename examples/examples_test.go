// Package examples holds sample manifests and client configurations; its
// test keeps them valid.
package examples

import (
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
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

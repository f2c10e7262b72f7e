package mirror_test

import (
	"testing"

	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror/desttest"
)

// A tree in a local directory (layout.DirStore) holds to the contract of
// every destination. Its writers exclude each other: a directory's
// Publish lock is exclusive across processes.
func TestTreeInDirectoryIsADestination(t *testing.T) {
	desttest.Run(t, desttest.Tree(
		func(t *testing.T) string { return t.TempDir() },
		func(t *testing.T, dir string) layout.Store {
			s, err := layout.NewDirStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	))
}

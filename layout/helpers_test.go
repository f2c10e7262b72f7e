package layout

import (
	"io/fs"
	"os"
	"sort"
	"testing"
)

// checkMode fails the test unless path has exactly the permission bits
// want. Nothing is checked on systems without Unix permission bits.
func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	if !unixModes {
		return
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %#o, want %#o", path, got, want)
	}
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

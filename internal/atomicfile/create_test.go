package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// CreateFile never replaces a file another process made meanwhile, and
// leaves no temporary file.
func TestCreateFileKeepsAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	theirs := filepath.Join(dir, "index.json")
	if err := os.WriteFile(theirs, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.CreateFile(theirs, []byte("ours")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateFile over an existing file: %v; want fs.ErrExist", err)
	}
	if data, err := os.ReadFile(theirs); err != nil || string(data) != "theirs" {
		t.Errorf("the existing file holds %q, %v; want it untouched", data, err)
	}
	ours := filepath.Join(dir, "oci-layout")
	if err := atomicfile.CreateFile(ours, []byte("ours")); err != nil {
		t.Fatalf("CreateFile: %v", err)
	}
	if data, err := os.ReadFile(ours); err != nil || string(data) != "ours" {
		t.Errorf("the new file holds %q, %v; want %q", data, err, "ours")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the directory holds %q; want only the two files", names)
	}
}

package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCopyFileIsAtomicAndReadable(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.zip")
	content := bytes.Repeat([]byte("archive"), 100_000)
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "out", "dst.zip")
	if err := MkdirAll(filepath.Dir(dst)); err != nil {
		t.Fatal(err)
	}
	root, err := OpenRoot(filepath.Dir(dst))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	if err := root.copyIn(src, filepath.Base(dst)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("copy differs (%v)", err)
	}
	if info, _ := os.Stat(dst); info.Mode().Perm() != FileMode {
		t.Errorf("copy has mode %04o, want %04o", info.Mode().Perm(), FileMode)
	}
	entries, _ := os.ReadDir(filepath.Dir(dst))
	if len(entries) != 1 {
		t.Errorf("temporary files left next to the copy: %v", entries)
	}
}

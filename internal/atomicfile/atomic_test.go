package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func checkContent(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("content of %s = %q, want %q", path, got, want)
	}
}

func TestWriteFileCreates(t *testing.T) {
	setUmask(t, 0o077)
	root := t.TempDir()
	path := filepath.Join(root, "a", "b", "c", "index.json")
	if err := WriteFile(path, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	checkContent(t, path, "hello")
	checkMode(t, path, FileMode)
	for _, d := range []string{"a", "a/b", "a/b/c"} {
		checkMode(t, filepath.Join(root, filepath.FromSlash(d)), DirMode)
	}
	if diff := cmp.Diff([]string{"index.json"}, listDir(t, filepath.Dir(path))); diff != "" {
		t.Errorf("unexpected files left behind (-want +got):\n%s", diff)
	}
}

func TestWriteFileReplaces(t *testing.T) {
	setUmask(t, 0o077)
	dir := t.TempDir()
	path := filepath.Join(dir, "1.0.0.json")
	if err := os.WriteFile(path, []byte("an older and longer document"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"new", "", "newer"} {
		if err := WriteFile(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		checkContent(t, path, content)
		checkMode(t, path, FileMode)
	}
	if diff := cmp.Diff([]string{"1.0.0.json"}, listDir(t, dir)); diff != "" {
		t.Errorf("unexpected files left behind (-want +got):\n%s", diff)
	}
}

// WriteFile renames a new file into place instead of rewriting the old one,
// so a reader that opened the old file keeps reading the old content.
func TestWriteFileIsAtomicReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "index.json")
	if err := WriteFile(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := WriteFile(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	n, _ := f.Read(buf)
	if got := string(buf[:n]); got != "old" {
		t.Errorf("reader opened before the replace sees %q, want %q", got, "old")
	}
	checkContent(t, path, "new")
}

func TestWriteFileErrors(t *testing.T) {
	t.Run("parent is a file", func(t *testing.T) {
		dir := t.TempDir()
		blocker := filepath.Join(dir, "host")
		if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		err := WriteFile(filepath.Join(blocker, "ns", "index.json"), []byte("data"))
		if err == nil || !strings.Contains(err.Error(), "a file is in the way") {
			t.Errorf("WriteFile under a file: error = %v, want %q", err, "a file is in the way")
		}
		checkContent(t, blocker, "x")
	})
	t.Run("target is a directory", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "index.json")
		if err := os.MkdirAll(filepath.Join(target, "child"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(target, []byte("data")); err == nil {
			t.Error("WriteFile over a non-empty directory succeeded")
		}
		if diff := cmp.Diff([]string{"index.json"}, listDir(t, dir)); diff != "" {
			t.Errorf("temporary file left behind (-want +got):\n%s", diff)
		}
	})
}

func TestMkdirAll(t *testing.T) {
	setUmask(t, 0o077)
	root := t.TempDir()
	deep := filepath.Join(root, "x", "y", "z")
	if err := MkdirAll(deep); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"x", "x/y", "x/y/z"} {
		checkMode(t, filepath.Join(root, filepath.FromSlash(d)), DirMode)
	}
	// Existing directories are fine, and their modes are left alone.
	if err := os.Chmod(deep, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(deep); err != nil {
		t.Errorf("MkdirAll of an existing directory: %v", err)
	}
	checkMode(t, deep, 0o711)

	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(file); err == nil {
		t.Error("MkdirAll over a file succeeded")
	}
	if err := MkdirAll(filepath.Join(file, "sub")); err == nil {
		t.Error("MkdirAll below a file succeeded")
	}
}

func TestSyncClose(t *testing.T) {
	setUmask(t, 0o077)
	dir := t.TempDir()
	f, err := os.CreateTemp(dir, "staged-*")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("payload"); err != nil {
		t.Fatal(err)
	}
	if err := SyncClose(f); err != nil {
		t.Fatal(err)
	}
	checkMode(t, f.Name(), FileMode)
	checkContent(t, f.Name(), "payload")
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("file still open after SyncClose: Close = %v", err)
	}
	// A closed file cannot be synced; the error is reported.
	if err := SyncClose(f); err == nil {
		t.Error("SyncClose of a closed file succeeded")
	}
}

func TestRename(t *testing.T) {
	setUmask(t, 0o077)
	root := t.TempDir()
	from := filepath.Join(root, "staged")
	if err := os.WriteFile(from, []byte("zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(root, "host", "ns", "type", "a.zip")
	if err := Rename(from, to); err != nil {
		t.Fatal(err)
	}
	checkContent(t, to, "zip")
	checkMode(t, filepath.Join(root, "host", "ns"), DirMode)
	if _, err := os.Stat(from); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("source still exists after Rename: %v", err)
	}

	// A failed rename removes the source, so nothing half-done lingers.
	from2 := filepath.Join(root, "staged2")
	if err := os.WriteFile(from2, []byte("zip"), 0o644); err != nil {
		t.Fatal(err)
	}
	blocked := filepath.Join(root, "dir")
	if err := os.MkdirAll(filepath.Join(blocked, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Rename(from2, blocked); err == nil {
		t.Fatal("Rename over a non-empty directory succeeded")
	}
	if _, err := os.Stat(from2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("source still exists after failed Rename: %v", err)
	}
}

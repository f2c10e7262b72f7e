//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A directory tfmirror writes is hostile input: these tests plant links
// in it and check that nothing is written through them.

// expectNames fails the test unless dir holds exactly the names want.
func expectNames(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %q, want %q: something was written outside the directory", dir, got, want)
	}
}

// expectFile fails the test unless path holds content.
func expectFile(t *testing.T, path, content string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != content {
		t.Errorf("%s = %q, %v; want %q, unchanged", path, data, err, content)
	}
}

// expectRefused fails the test unless err is an error naming path.
func expectRefused(t *testing.T, what string, err error, path string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
	} else if !strings.Contains(err.Error(), path) {
		t.Errorf("%s: error %q does not name %s", what, err, path)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteFileIn (for --extras) refuses a link below its root.
func TestHardeningWriteFileIn(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	link := filepath.Join(root, "lock-files")
	symlink(t, elsewhere, link)
	err := WriteFileIn(root, "lock-files/app/.terraform.lock.hcl", []byte("lock"))
	expectRefused(t, "WriteFileIn", err, link)
	expectNames(t, elsewhere)
	if err := WriteFileIn(root, "cli-config/a.tfrc", []byte("x")); err != nil {
		t.Fatal(err)
	}
	expectFile(t, filepath.Join(root, "cli-config", "a.tfrc"), "x")
}

// A real leftover of an interrupted write (its temporary file, never
// renamed) is removed by RemoveTemps; the temporary names this package
// makes are the ones its cleanup recognizes, and an operator's files are
// left alone whatever their names.
func TestHardeningInterruptedWriteRemoved(t *testing.T) {
	dir := t.TempDir()
	root, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := root.WriteFile("sub/index.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	f, tmp, err := root.createTemp("sub", "1.0.0.json")
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // the process dies here
	if !strings.HasPrefix(filepath.Base(tmp), TempPrefix+"1.0.0.json-") {
		t.Errorf("temporary file %s is not named %s<name>-<random>", tmp, TempPrefix)
	}
	older := filepath.Join(dir, "sub", ".tmp-index.json-4567") // an older release's
	operator := []string{filepath.Join(dir, "sub", ".tmp-notes"), filepath.Join(dir, "sub", "notes.txt")}
	for _, p := range append([]string{older}, operator...) {
		writeFile(t, p, "x")
	}
	if err := root.RemoveTemps("sub"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{root.Path(tmp), older} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s was not removed: %v", p, err)
		}
	}
	for _, p := range operator {
		expectFile(t, p, "x")
	}
	expectFile(t, filepath.Join(dir, "sub", "index.json"), "{}")
	if err := root.RemoveTemps("missing"); err != nil {
		t.Errorf("RemoveTemps of a missing directory: %v", err)
	}
	if !isTempName(tempName("index.json")) || isTempName(".tmp-notes") || isTempName("index.json") {
		t.Error("isTempName does not match tempName")
	}
}

// RefuseLink refuses a link to a directory, and nothing else.
func TestHardeningRefuseLink(t *testing.T) {
	dir := t.TempDir()
	elsewhere := t.TempDir()
	link := filepath.Join(dir, "pkg")
	symlink(t, elsewhere, link)
	writeFile(t, filepath.Join(dir, "file"), "x")
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	expectRefused(t, "RefuseLink", root.RefuseLink("pkg"), link)
	for _, rel := range []string{"file", "dir", "missing"} {
		if err := root.RefuseLink(rel); err != nil {
			t.Errorf("RefuseLink(%s): %v", rel, err)
		}
	}
}

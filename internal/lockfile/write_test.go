//go:build unix

package lockfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
)

// These tests are about Unix file modes, symbolic links and FIFOs. Some
// change the process umask, so none of them runs in parallel.

const lockName = ".terraform.lock.hcl"

func sampleFile(t *testing.T) *File {
	t.Helper()
	return file(&Lock{
		Provider: provider(t, "hashicorp/foo"),
		Version:  version(t, "1.1.0"),
		Hashes:   []hashing.Hash{"h1:bb"},
	})
}

// onlyEntries fails unless dir holds exactly the named entries, so no
// temporary file is left behind.
func onlyEntries(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, "\n") != strings.Join(names, "\n") {
		t.Fatalf("directory holds %q, want %q", got, names)
	}
}

func setUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func TestWriteKeepsExistingMode(t *testing.T) {
	for _, mode := range []fs.FileMode{0o600, 0o664, 0o640, 0o444} {
		t.Run(mode.String(), func(t *testing.T) {
			setUmask(t, 0o022)
			dir := t.TempDir()
			path := filepath.Join(dir, lockName)
			if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			f := sampleFile(t)
			if err := Write(path, f); err != nil {
				t.Fatal(err)
			}
			info, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Mode().IsRegular() || info.Mode().Perm() != mode {
				t.Fatalf("mode after Write = %v, want %v", info.Mode(), mode)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(f.Bytes()) {
				t.Fatalf("file holds\n%s\nwant\n%s", got, f.Bytes())
			}
			onlyEntries(t, dir, lockName)
		})
	}
}

func TestWriteNewFileMode(t *testing.T) {
	for _, mask := range []int{0o022, 0o077, 0o002} {
		t.Run(fs.FileMode(mask).String(), func(t *testing.T) {
			setUmask(t, mask)
			dir := t.TempDir()
			path := filepath.Join(dir, lockName)
			if err := Write(path, sampleFile(t)); err != nil {
				t.Fatal(err)
			}
			info, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !info.Mode().IsRegular() || info.Mode().Perm() != 0o644 {
				t.Fatalf("new file mode = %v, want 0644", info.Mode())
			}
			onlyEntries(t, dir, lockName)
		})
	}
}

func TestWriteRefusesSymlink(t *testing.T) {
	for _, dangling := range []bool{false, true} {
		name := "to a file"
		if dangling {
			name = "dangling"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "real.hcl")
			if !dangling {
				if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, lockName)
			if err := os.Symlink("real.hcl", path); err != nil {
				t.Fatal(err)
			}
			err := Write(path, sampleFile(t))
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("Write error = %v, want one naming %s as a symbolic link", err, path)
			}
			if dest, err := os.Readlink(path); err != nil || dest != "real.hcl" {
				t.Fatalf("link now %q, %v; want it untouched", dest, err)
			}
			if dangling {
				if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("Write created the link's target: %v", err)
				}
				onlyEntries(t, dir, lockName)
				return
			}
			got, err := os.ReadFile(target)
			if err != nil || string(got) != "target" {
				t.Fatalf("link target holds %q, %v; want it unchanged", got, err)
			}
			onlyEntries(t, dir, lockName, "real.hcl")
		})
	}
}

// writeWithin runs Write in the background and fails the test if it does
// not return within a few seconds, as it would if it opened a FIFO.
func writeWithin(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- Write(path, sampleFile(t)) }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("Write(%s) blocked", path)
		return nil
	}
}

func TestWriteRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, lockName)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	err := writeWithin(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Write error = %v, want one naming %s as not a regular file", err, path)
	}
	info, err := os.Lstat(path)
	if err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v, %v", info, err)
	}
	onlyEntries(t, dir, lockName)
}

func TestWriteRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, lockName)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeWithin(t, path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Write error = %v, want one naming %s as not a regular file", err, path)
	}
	onlyEntries(t, dir, lockName)
}

func TestWriteRemovesTempOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, lockName)
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	var tmpName string
	renameFile = func(from, to string) error {
		tmpName = filepath.Base(from)
		return errors.New("injected rename failure")
	}
	t.Cleanup(func() { renameFile = os.Rename })

	err := Write(path, sampleFile(t))
	if err == nil || !strings.Contains(err.Error(), "injected rename failure") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Write error = %v, want the rename failure for %s", err, path)
	}
	if !strings.HasPrefix(tmpName, lockName+".tfmirror-") {
		t.Fatalf("temporary file %q, want a name starting %q", tmpName, lockName+".tfmirror-")
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "old" {
		t.Fatalf("lock file holds %q, %v; want it unchanged", got, err)
	}
	onlyEntries(t, dir, lockName)
}

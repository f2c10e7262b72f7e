//go:build unix

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// readWithin runs Read, failing the test if it takes more than a few
// seconds (a pipe is then released so the test ends).
func readWithin(t *testing.T, path string) (*File, error) {
	t.Helper()
	type result struct {
		f   *File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := Read(path)
		done <- result{f, err}
	}()
	select {
	case res := <-done:
		return res.f, res.err
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("Read(%s) did not return within 5s", path)
		return nil, nil
	}
}

func TestReadRefusesLockFilesThatAreNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo", ".terraform.lock.hcl")
	zero := filepath.Join(dir, "zero", ".terraform.lock.hcl")
	for _, p := range []string{fifo, zero} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, zero} {
		_, err := readWithin(t, path)
		var herr *hclsafe.Error
		if !errors.As(err, &herr) || !strings.Contains(err.Error(), path+": Not a regular file") {
			t.Errorf("Read(%s) = %v, want a refusal naming the file", path, err)
		}
	}
}

func TestReadRefusesHugeLockFilesAndFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.hcl")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 64<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := readWithin(t, huge); err == nil || !strings.Contains(err.Error(), huge+": File too large") {
		t.Errorf("got %v, want a size refusal naming the file", err)
	}
	real := filepath.Join(dir, "real.hcl")
	src := "provider \"registry.opentofu.org/hashicorp/aws\" {\n  version = \"5.0.0\"\n}\n"
	if err := os.WriteFile(real, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".terraform.lock.hcl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if f, err := readWithin(t, link); err != nil || len(f.Locks) != 1 {
		t.Errorf("a link to a lock file: %v, %v", f, err)
	}
}

func TestReadRefusesDeepNesting(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".terraform.lock.hcl")
	src := "provider \"registry.opentofu.org/hashicorp/aws\" {\n  version = \"5.0.0\"\n  hashes = " + strings.Repeat("[", 100_000) + "\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := readWithin(t, path)
	var lerr *Error
	if !errors.As(err, &lerr) || !strings.Contains(err.Error(), path+":3:") || !strings.Contains(err.Error(), "Nesting too deep") {
		t.Errorf("got %v, want a refusal at line 3 of the lock file", err)
	}
}

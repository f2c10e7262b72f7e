//go:build unix

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/hclsafe"
	"github.com/tfmirror/tfmirror/internal/testutil/hostilefs"
)

// readWithin runs Read, failing the test if it takes more than a few
// seconds (a pipe at path is then released so the test ends).
func readWithin(t *testing.T, path string) (*File, error) {
	t.Helper()
	return hostilefs.Within(t, path, func() (*File, error) { return Read(path) })
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
	hostilefs.FIFO(t, fifo)
	hostilefs.DevZero(t, zero)
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
	hostilefs.Sparse(t, huge, 64<<20)
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

//go:build unix

package hclsafe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/hostilefs"
)

func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.tf")
	hostilefs.FIFO(t, fifo)
	zero := filepath.Join(dir, "zero.tf")
	hostilefs.DevZero(t, zero)
	for name, path := range map[string]string{"fifo": fifo, "device": zero, "directory": dir} {
		t.Run(name, func(t *testing.T) {
			_, err := hostilefs.Within(t, path, func() ([]byte, error) { return ReadFile(path, MaxConfigSize) })
			var e *Error
			if !errors.As(err, &e) || e.Filename != path || e.Summary != "Not a regular file" {
				t.Errorf("got %v, want a refusal naming %s", err, path)
			}
		})
	}
}

func TestReadFileCapsSize(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.tf")
	if err := os.WriteFile(path, make([]byte, 2<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path, 2<<20)
	if e, ok := As(err); !ok || e.Summary != "File too large" || !strings.Contains(e.Detail, "2 MiB") {
		t.Errorf("got %v, want a size refusal", err)
	}
	link := filepath.Join(dir, "link.tf")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if src, err := ReadFile(link, 4<<20); err != nil || len(src) != 2<<20+1 {
		t.Errorf("a link to a regular file: %d bytes, %v", len(src), err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.tf"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestReadFileReadsTheNullDeviceAsEmpty(t *testing.T) {
	link := filepath.Join(t.TempDir(), "null.hcl")
	if err := os.Symlink(os.DevNull, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{os.DevNull, link} {
		if src, err := ReadFile(path, MaxConfigSize); err != nil || len(src) != 0 {
			t.Errorf("ReadFile(%s) = %q, %v; want empty", path, src, err)
		}
	}
}

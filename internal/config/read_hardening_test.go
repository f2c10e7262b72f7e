//go:build unix

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/config"
)

// loadWithin loads the manifest at path, failing the test if that takes
// longer than a few seconds (a pipe is then released so the test ends).
func loadWithin(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := config.Load(path)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("Load(%s) did not return within 5s", path)
		return nil
	}
}

func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hcl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.hcl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, zero, dir} {
		err := loadWithin(t, path)
		var cerr *config.Error
		if !errors.As(err, &cerr) || !strings.Contains(err.Error(), path+": Not a regular file") {
			t.Errorf("Load(%s) = %v, want a refusal naming the file", path, err)
		}
	}
}

func TestLoadRefusesAHugeManifest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mirror.hcl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	err = loadWithin(t, path)
	var cerr *config.Error
	if !errors.As(err, &cerr) || !strings.Contains(err.Error(), path+": File too large") {
		t.Errorf("got %v, want a size refusal naming the file", err)
	}
	link := filepath.Join(t.TempDir(), "link.hcl")
	if err := os.WriteFile(path, []byte("platforms = [\"linux_amd64\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := loadWithin(t, link); err != nil {
		t.Errorf("a link to a manifest: %v", err)
	}
}

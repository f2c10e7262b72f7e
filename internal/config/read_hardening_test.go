//go:build unix

package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/testutil/hostilefs"
)

// loadWithin loads the manifest at path, failing the test if that takes
// longer than a few seconds (a pipe at path is then released so the test
// ends).
func loadWithin(t *testing.T, path string) error {
	t.Helper()
	_, err := hostilefs.Within(t, path, func() (*config.Manifest, error) { return config.Load(path) })
	return err
}

func TestLoadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.hcl")
	hostilefs.FIFO(t, fifo)
	zero := filepath.Join(dir, "zero.hcl")
	hostilefs.DevZero(t, zero)
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
	hostilefs.Sparse(t, path, 64<<20)
	err := loadWithin(t, path)
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

//go:build unix

package hashing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// HashFile reads only regular files: a link to /dev/zero in a mirror must
// not make hashing read forever.
func TestHashFileRefusesLinksAndDevices(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "archive.zip")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{link, "/dev/zero"} {
		start := time.Now()
		_, _, err := HashFile(path)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("HashFile(%s): err = %v, want a refusal", path, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("HashFile(%s) took %s", path, d)
		}
	}
}

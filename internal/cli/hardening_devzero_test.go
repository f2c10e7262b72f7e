//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An archive of a mirror replaced by a link to /dev/zero neither hangs a
// rebuild nor is read: the rebuild fails quickly and names it.
func TestRebuildOverArchiveLinkedToDevZero(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	dir := filepath.Dir(site)
	archive := filepath.Join(site, "registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip")
	if err := os.Remove(archive); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", archive); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, stdout, stderr := o.run(t, dir, "build")
	if time.Since(start) > 20*time.Second {
		t.Errorf("the rebuild took %s", time.Since(start))
	}
	if code == ExitOK {
		t.Errorf("the rebuild over a linked archive succeeded\n%s%s", stdout, stderr)
	}
	if target, err := os.Readlink(archive); err != nil || target != "/dev/zero" {
		t.Errorf("the link was replaced or followed: %q, %v", target, err)
	}
}

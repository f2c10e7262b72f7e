//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
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

// A bundle is never unpacked through a link at the destination's private
// directory.
func TestBundleImportRefusesLinkedPrivateDir(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	file := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", file)
	dest := filepath.Join(t.TempDir(), "dest")
	elsewhere := t.TempDir()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dest, ".tfmirror")); err != nil {
		t.Fatal(err)
	}
	// Refused before anything is unpacked, naming the link (the lock
	// would refuse it too, but only after the bundle was staged there).
	if code, stdout, stderr := o.run(t, work, "bundle", "import", file, "--out", dest); code == ExitOK || !strings.Contains(stdout+stderr, ".tfmirror is a") {
		t.Errorf("import through a linked .tfmirror: exit %d, want a refusal naming the link\n%s%s", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("the bundle was unpacked through the link: %v", entries)
	}
}

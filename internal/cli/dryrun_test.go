package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDryRunMakesOnlyMetadataRequestsAndWritesNothing(t *testing.T) {
	o := newOrigin(t)
	o.reg.AddWithSize("hashicorp", "foo", "1.0.0", 100_000, "linux_amd64", "darwin_arm64")
	// bar publishes freebsd_arm, so that foo lacking it is skipped, not
	// refused (TestUnpublishedPlatformIsRefusedBeforeAnyDownload).
	o.reg.AddWithSize("hashicorp", "bar", "1.0.0", 100_000, "freebsd_arm")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64", "freebsd_arm"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "hashicorp/bar" {
  versions  = "1.0.0"
  platforms = ["freebsd_arm"]
}
`+o.hostBlock("registry.opentofu.org"))
	code, stdout, stderr := o.run(t, dir, "build", "--dry-run")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"download  registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64 (100.0 kB)",
		"skipped   registry.opentofu.org/hashicorp/foo 1.0.0 freebsd_arm: platform not published",
		"would download 3 packages (300.0 kB), keep 0 (0 B), skip 1",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, r := range o.reg.Requests() {
		if strings.HasPrefix(r, "GET /releases/") {
			t.Errorf("a dry run downloaded %s", r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "site")); !os.IsNotExist(err) {
		t.Errorf("a dry run created the output directory: %v", err)
	}

	// After a build, the same dry run keeps everything.
	if code, _, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("build: %d %s", code, stderr)
	}
	code, stdout, _ = o.run(t, dir, "build", "--dry-run")
	if code != ExitOK || !strings.Contains(stdout, "would download 0 packages (0 B), keep 3 (300.0 kB), skip 1") {
		t.Errorf("dry run after a build: exit %d\n%s", code, stdout)
	}
}

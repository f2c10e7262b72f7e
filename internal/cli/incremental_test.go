package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

func TestNoOpRebuildDownloadsNothingAndRepairsDamage(t *testing.T) {
	o := newOrigin(t)
	platforms := []string{"linux_amd64", "darwin_arm64", "windows_amd64"}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		o.reg.AddWithSize("hashicorp", "foo", v, 256<<10, platforms...)
	}
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]
provider "hashicorp/foo" { versions = ">= 1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("cold build: exit %d\n%s%s", code, stdout, stderr)
	}
	archiveBytes := func() int64 {
		var n int64
		for _, v := range []string{"1.0.0", "1.1.0"} {
			for _, p := range platforms {
				n += o.reg.BytesServed(fakeregistry.ArchivePath("hashicorp", "foo", v, p))
			}
		}
		return n
	}
	requests := len(o.reg.Requests())
	cold := archiveBytes()

	code, stdout, stderr := o.run(t, dir, "build")
	if code != ExitOK || !strings.Contains(stdout, "0 mirrored, 6 already present") {
		t.Fatalf("no-op rebuild: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := archiveBytes() - cold; got != 0 {
		t.Errorf("the no-op rebuild downloaded %d archive bytes", got)
	}
	if extra := o.reg.Requests()[requests:]; len(extra) != 1 || !strings.HasSuffix(extra[0], "/versions") {
		t.Errorf("the no-op rebuild made requests beyond the versions list: %q", extra)
	}

	// A damaged archive is found by its size and replaced.
	archive := filepath.Join(dir, "site", "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.1.0_darwin_arm64.zip")
	if err := os.Truncate(archive, 1000); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = o.run(t, dir, "build")
	if code != ExitOK || !strings.Contains(stdout, "1 mirrored, 5 already present") {
		t.Fatalf("repairing rebuild: exit %d\n%s%s", code, stdout, stderr)
	}
	if got := archiveBytes() - cold; got != 256<<10 {
		t.Errorf("the repair downloaded %d archive bytes, want exactly the one archive (%d)", got, 256<<10)
	}

	// Same size, flipped byte: --verify-existing finds it.
	data, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	data[100] ^= 1
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = o.run(t, dir, "build", "--verify-existing")
	if code != ExitOK || !strings.Contains(stdout, "1 mirrored, 5 already present") {
		t.Fatalf("--verify-existing: exit %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := o.run(t, dir, "verify", "site"); code != ExitOK {
		t.Errorf("verify after the repairs: exit %d\n%s%s", code, stdout, stderr)
	}
}

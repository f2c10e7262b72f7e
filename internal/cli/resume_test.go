package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

const resumeSize = 400_000

// resumeSetup publishes one large archive and a manifest for it.
func resumeSetup(t *testing.T) (origin, string, string, []byte) {
	t.Helper()
	o := newOrigin(t)
	o.reg.AddWithSize("hashicorp", "foo", "1.0.0", resumeSize, "linux_amd64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	return o, dir, fakeregistry.ArchivePath("hashicorp", "foo", "1.0.0", "linux_amd64"), o.reg.Archive("hashicorp", "foo", "1.0.0", "linux_amd64")
}

func checkArchive(t *testing.T, dir string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, "site", "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_linux_amd64.zip"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("published archive differs from upstream (%v)", err)
	}
}

func partialPath(dir string, archive []byte) string {
	sum := sha256.Sum256(archive)
	return filepath.Join(dir, "site", ".tfmirror", "partial", hex.EncodeToString(sum[:]))
}

func TestResumeWithinARun(t *testing.T) {
	for _, ranges := range []bool{true, false} {
		name := map[bool]string{true: "range requests", false: "no range support"}[ranges]
		t.Run(name, func(t *testing.T) {
			o, dir, path, archive := resumeSetup(t)
			o.reg.SetRangeSupport(ranges)
			o.reg.ResetMidBody(path, 1)
			if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			checkArchive(t, dir, archive)
			served := o.reg.BytesServed(path)
			// Half the archive was written before the reset, though not
			// all of it reached the client; resuming fetches only what did
			// not, so it costs less than starting over (exactly 1.5x).
			if ranges && (o.reg.RangeRequests() != 1 || served >= resumeSize+resumeSize/2) {
				t.Errorf("resumed with %d range requests and %d bytes served; want 1 and fewer than a restart (%d)", o.reg.RangeRequests(), served, resumeSize+resumeSize/2)
			}
			if !ranges && served != resumeSize+resumeSize/2 {
				t.Errorf("served %d bytes; without range support the retry must fetch the whole archive again (%d)", served, resumeSize+resumeSize/2)
			}
		})
	}
}

func TestResumeAcrossRuns(t *testing.T) {
	o, dir, path, archive := resumeSetup(t)
	// The first build fails after half of the archive, every time.
	o.reg.ResetMidBody(path, 100)
	if code, _, stderr := o.run(t, dir, "build", "--retries", "0"); code != ExitFailure {
		t.Fatalf("exit %d, want %d\n%s", code, ExitFailure, stderr)
	}
	info, err := os.Stat(partialPath(dir, archive))
	if err != nil || info.Size() == 0 || info.Size() >= resumeSize {
		t.Fatalf("the failed build kept no partial download: %v %v", info, err)
	}
	kept := info.Size()
	o.reg.Reset()
	before := o.reg.BytesServed(path)
	if code, stdout, stderr := o.run(t, dir, "build"); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	checkArchive(t, dir, archive)
	if got := o.reg.BytesServed(path) - before; got != resumeSize-kept || o.reg.RangeRequests() != 1 {
		t.Errorf("the next run downloaded %d bytes with %d range requests; want the missing %d with one", got, o.reg.RangeRequests(), resumeSize-kept)
	}
	if _, err := os.Stat(partialPath(dir, archive)); !os.IsNotExist(err) {
		t.Errorf("the completed partial download is still there: %v", err)
	}
}

func TestCorruptPartialDownloadStartsOver(t *testing.T) {
	o, dir, path, archive := resumeSetup(t)
	partial := partialPath(dir, archive)
	if err := os.MkdirAll(filepath.Dir(partial), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(partial, bytes.Repeat([]byte("x"), resumeSize/3), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := o.run(t, dir, "build")
	if code != ExitOK || strings.Contains(stdout+stderr, "checksum") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	checkArchive(t, dir, archive)
	if got := o.reg.BytesServed(path); got != resumeSize-resumeSize/3+resumeSize {
		t.Errorf("served %d bytes: want the resumed rest, then the whole archive once more", got)
	}
}

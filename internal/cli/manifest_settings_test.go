package cli

import (
	"strings"
	"testing"
)

// verify and lock read the manifest's settings block as build does: a
// max_archive_bytes below the archives' size makes verify of a URL fail,
// and a flag given on the command line wins over the manifest.
func TestVerifyHonoursManifestSettings(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	url := serveSite(t, &o, site, "application/json")
	dir := t.TempDir()
	writeManifest(t, dir, "settings {\n  max_archive_bytes = 16\n}\n")
	code, stdout, stderr := o.run(t, dir, "verify", url)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "limit") {
		t.Errorf("verify with max_archive_bytes = 16: exit %d, want %d naming the limit\n%s%s", code, ExitVerification, stdout, stderr)
	}
	if code, stdout, stderr := o.run(t, dir, "verify", url, "--max-archive-bytes", "100000000"); code != ExitOK {
		t.Errorf("verify with the flag over the manifest: exit %d\n%s%s", code, stdout, stderr)
	}
}

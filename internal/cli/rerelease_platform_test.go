package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

// A version the origin re-released with other bytes, built again for a
// platform the mirror lacks: the origin's new SHA256SUMS no longer vouch
// for the package the mirror keeps, so nothing of the release is written
// (exit 3) and the mirror still verifies. The build wrote the new
// SHA256SUMS, signature and provenance over the kept ones, leaving the
// kept archive signed by nothing.
func TestReReleaseWithANewPlatformKeepsTheRelease(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	manifest := func(platforms string) {
		writeManifest(t, dir, `platforms = [`+platforms+`]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	}
	manifest(`"linux_amd64"`)
	mustRun(t, o, dir, "build")
	site := filepath.Join(dir, "site")
	before := snapshot(t, site)

	o.reg.AddWithOptions("hashicorp", "foo", "1.0.0", fakeregistry.Options{DirEntries: true}, "linux_amd64", "darwin_arm64")
	manifest(`"linux_amd64", "darwin_arm64"`)
	code, stdout, stderr := o.run(t, dir, "build")
	if code != ExitVerification || !strings.Contains(stdout+stderr, "re-released at the origin") {
		t.Errorf("build of a re-released version: exit %d, want %d\n%s%s", code, ExitVerification, stdout, stderr)
	}
	verifyClean(t, o, site)
	after := snapshot(t, site)
	for _, f := range []string{"1.0.0.json", "terraform-provider-foo_1.0.0_SHA256SUMS", "terraform-provider-foo_1.0.0_SHA256SUMS.sig", "terraform-provider-foo_1.0.0_provenance.json"} {
		rel := "registry.opentofu.org/hashicorp/foo/" + f
		if before[rel] != after[rel] {
			t.Errorf("%s changed", rel)
		}
	}
}

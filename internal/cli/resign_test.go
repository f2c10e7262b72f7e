package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// The origin re-signs a kept release's SHA256SUMS, byte for byte the same,
// with a new key; a build then adds a platform. The kept signature still
// vouches for every line, so the release keeps it and its signer: the new
// platform is published, the mirror verifies, and catalog.json still says
// the release was signed by the first key (the build replaced the
// signature and the signer, losing the mirror's key history).
func TestReSignedReleaseKeepsItsSignature(t *testing.T) {
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	o := keysOrigin{origin: newOrigin(t), dir: t.TempDir()}
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.signWith(t, "1.0.0", a, time.Time{}, a)
	manifest := func(platforms string) {
		writeManifest(t, o.dir, `platforms = [`+platforms+`]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	}
	manifest(`"linux_amd64"`)
	if code, out := o.tfmirror(t, "build"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s", code, out)
	}
	site := filepath.Join(o.dir, "site")
	sigPath := filepath.Join(site, filepath.FromSlash("registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_SHA256SUMS.sig"))
	sig, err := os.ReadFile(sigPath)
	if err != nil {
		t.Fatal(err)
	}

	o.signWith(t, "1.0.0", b, time.Time{}, b)
	manifest(`"linux_amd64", "darwin_arm64"`)
	if code, out := o.tfmirror(t, "build"); code != ExitOK || !strings.Contains(out, "mirrored  registry.opentofu.org/hashicorp/foo 1.0.0 darwin_arm64") {
		t.Fatalf("build of a new platform of a re-signed release: exit %d\n%s", code, out)
	}
	if now, _ := os.ReadFile(sigPath); !bytes.Equal(now, sig) {
		t.Error("the kept signature was replaced")
	}
	prov, err := layout.DecodeProvenance(readFile(t, filepath.Join(site, filepath.FromSlash("registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_provenance.json"))))
	if err != nil || prov.KeyID != a.ID || len(prov.Archives) != 2 {
		t.Errorf("provenance signed by %s with %d packages (%v), want %s and both", prov.KeyID, len(prov.Archives), err, a.ID)
	}
	if code, out := o.tfmirror(t, "verify", site); code != ExitOK {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
}

package cli

import (
	"path/filepath"
	"testing"
)

// A prune that drops a provider from a signed mirror (the manifest no
// longer names it) leaves a catalog that verify --catalog-key finds
// matching the tree.
func TestSignedCatalogAfterPruneVerifies(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	mustRun(t, o, dir, "prune", "--grace", "0", "--sign-key", private)
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, filepath.Join(dir, "site"))
	if code != ExitOK {
		t.Errorf("verify --catalog-key after a prune: exit %d\n%s%s", code, stdout, stderr)
	}
}

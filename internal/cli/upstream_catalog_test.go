package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/layout"
)

// resignCatalog rewrites a tree's catalog.json with change applied and
// signs it with private: a catalog its operator's key vouches for,
// whatever it says.
func resignCatalog(t *testing.T, site, private string, change func(*layout.Catalog)) {
	t.Helper()
	c, err := layout.DecodeCatalog(readFile(t, filepath.Join(site, layout.CatalogPath)))
	if err != nil {
		t.Fatal(err)
	}
	change(&c)
	key, err := signing.ReadSigningKey(readFile(t, private))
	if err != nil {
		t.Fatal(err)
	}
	signCatalogAs(t, site, key, c)
}

func TestBuildFromASignedUpstreamRecordsItsSigner(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	upstream := filepath.Join(dir, "site")
	signer, err := signing.ReadSigningKey(readFile(t, private))
	if err != nil {
		t.Fatal(err)
	}

	build := func(out string, extra ...string) (int, string) {
		t.Helper()
		args := append([]string{"build", "--from", upstream, "--out", out, "--catalog-key", public}, extra...)
		code, stdout, stderr := o.run(t, dir, args...)
		return code, stdout + stderr
	}
	code, out := build("copy")
	if code != ExitOK || !strings.Contains(out, "catalog.json signed by key "+signer.KeyID()) {
		t.Fatalf("build from the signed upstream: exit %d, want 0 naming the signer %s\n%s", code, signer.KeyID(), out)
	}
	rel := filepath.Join("copy", "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_provenance.json")
	prov, err := layout.DecodeProvenance(readFile(t, filepath.Join(dir, rel)))
	if err != nil {
		t.Fatal(err)
	}
	for plat, a := range prov.Archives {
		if a.Catalog == nil || a.Catalog.KeyID != signer.KeyID() || a.Catalog.Upstream != upstream || len(a.Catalog.Fingerprint) != 40 {
			t.Errorf("%s: provenance records the upstream catalog %+v, want %s signed by %s", plat, a.Catalog, upstream, signer.KeyID())
		}
	}

	// Another operator's key vouches for nothing.
	_, other := pgptest.New(t, "other").WriteFiles(t, t.TempDir(), "other")
	if code, out := build("copy2", "--catalog-key", other); code != ExitVerification || !strings.Contains(out, "catalog.json.asc") {
		t.Errorf("catalog signed by another key: exit %d, want %d naming the signature\n%s", code, ExitVerification, out)
	}

	// A signed catalog that leaves out an archive, then one that lists
	// another digest for it: nothing of the release is taken.
	foo := "registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_darwin_arm64.zip"
	saved := readFile(t, filepath.Join(upstream, layout.CatalogPath))
	savedSig := readFile(t, filepath.Join(upstream, layout.CatalogSignaturePath))
	resignCatalog(t, upstream, private, func(c *layout.Catalog) { delete(c.Archives, foo) })
	if code, out := build("copy3"); code != ExitVerification || !strings.Contains(out, "does not list its archive") || !strings.Contains(out, "hashicorp/foo 1.0.0 darwin_arm64") {
		t.Errorf("archive left out of the signed catalog: exit %d, want %d naming the package\n%s", code, ExitVerification, out)
	}
	resignCatalog(t, upstream, private, func(c *layout.Catalog) {
		a := c.Archives[foo]
		a.ZH = hashing.Hash("zh:" + strings.Repeat("0", 64))
		c.Archives[foo] = a
	})
	if code, out := build("copy4"); code != ExitVerification || !strings.Contains(out, "lists zh:000") {
		t.Errorf("other digest in the signed catalog: exit %d, want %d naming both digests\n%s", code, ExitVerification, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "copy4", "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_darwin_arm64.zip")); err == nil {
		t.Error("the refused package was published")
	}
	writeFile(t, filepath.Join(upstream, layout.CatalogPath), saved)
	writeFile(t, filepath.Join(upstream, layout.CatalogSignaturePath), savedSig)

	// An unsigned upstream.
	if err := os.Remove(filepath.Join(upstream, layout.CatalogSignaturePath)); err != nil {
		t.Fatal(err)
	}
	if code, out := build("copy5"); code != ExitVerification || !strings.Contains(out, "has no signature") {
		t.Errorf("unsigned upstream: exit %d, want %d\n%s", code, ExitVerification, out)
	}
}

func TestBuildCatalogKeyWithoutUpstreamSaysSo(t *testing.T) {
	o, dir, _, public := signedOrigin(t)
	code, stdout, stderr := o.run(t, dir, "build", "--catalog-key", public)
	if code != ExitOK || !strings.Contains(stdout+stderr, "this build reads none") {
		t.Errorf("build from the origin with --catalog-key: exit %d, want 0 with a warning\n%s%s", code, stdout, stderr)
	}
}

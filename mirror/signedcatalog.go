package mirror

import (
	"fmt"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/layout"
)

// SignedCatalog is an upstream mirror's catalog.json whose signature a
// key the operator named verified (build --catalog-key): it vouches for
// the digests of every archive it lists. A MirrorSource that has one
// offers only what it lists, with the digest it lists, and the releases
// built from it record its signer.
type SignedCatalog struct {
	Signer   Signer
	Archives map[string]layout.CatalogArchive
}

// vouch checks a package's meta against the catalog and marks it with the
// catalog's signer. A package the catalog does not list, or lists with
// another digest, is refused. Where the upstream promised no digest (a
// mirror listing h1: hashes only), the catalog's becomes the one the
// download must have.
func (c *SignedCatalog) vouch(where string, pkg Package, meta *PackageMeta) error {
	by := fmt.Sprintf("the catalog.json of %s, signed by %s", where, c.Signer.KeyID)
	a, ok := c.Archives[layout.ArchivePath(pkg.Provider, pkg.Version, pkg.Platform)]
	if !ok {
		return &VerificationError{Package: pkg, Problem: by + ", does not list its archive"}
	}
	digest, err := a.ZH.ZHDigest()
	if err != nil {
		return &VerificationError{Package: pkg, Problem: by + ", lists no valid zh: hash for it", Err: err}
	}
	switch {
	case meta.digestKnown() && meta.SHA256 != digest:
		return &VerificationError{Package: pkg, Problem: fmt.Sprintf("%s, lists %s, but the upstream offers %s", by, a.ZH, hashing.ZH(meta.SHA256))}
	case !meta.digestKnown():
		meta.SHA256 = digest
	}
	meta.Catalog = &layout.CatalogVouch{Upstream: where, KeyID: c.Signer.KeyID, Fingerprint: c.Signer.Fingerprint}
	return nil
}

package layout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Sealer signs catalog.json: an operator's key, through package signing.
type Sealer interface {
	// SignArmored returns an ASCII-armored detached signature of doc.
	SignArmored(doc []byte) ([]byte, error)
	// Signs reports whether sig is the sealer's valid signature of doc.
	Signs(doc, sig []byte) bool
}

// SealReport says what SealCatalog wrote.
type SealReport struct {
	// Listed counts the archives the catalog lists.
	Listed int
	// Rewrote says catalog.json changed; Signed that a new signature was
	// written.
	Rewrote, Signed bool
	// Warning says why the change records pinned were left as they were
	// (an index that cannot be read); "" when nothing is wrong.
	Warning string
}

// SealCatalog brings the archive listing of catalog.json (Catalog.Archives)
// in step with the tree and, with a sealer, pins the change records the
// index lists (Catalog.Changes) and signs it into CatalogSignaturePath. Without a sealer a catalog never sealed is left
// as it is, and a sealed one keeps its listing current (losing its
// signature when it changes). Nothing is written when nothing changed: a
// signature that still verifies stays.
//
// The order keeps a signature from standing next to other bytes: the old
// signature is deleted before catalog.json changes, the new one written
// after it, and deleted again if catalog.json changed meanwhile (another
// writer): a missing signature is safe, a wrong one is not.
func (t *Tree) SealCatalog(ctx context.Context, s Sealer) (SealReport, error) {
	var report SealReport
	if t.s == nil {
		return report, fmt.Errorf("seal %s of %s: %w", CatalogPath, t.Location(), ErrReadOnly)
	}
	data, tag, err := t.readTagged(ctx, CatalogPath, MaxDocumentBytes)
	if err != nil || data == nil {
		return report, err
	}
	c, err := DecodeCatalog(data)
	if err != nil {
		return report, fmt.Errorf("the existing %w", err)
	}
	if s == nil && c.Archives == nil {
		return report, nil
	}
	if c.Archives, err = t.CatalogArchives(ctx); err != nil {
		return report, err
	}
	if s != nil {
		if c.Changes, report.Warning, err = t.pinChanges(ctx, c.Changes); err != nil {
			return report, err
		}
	}
	report.Listed = len(c.Archives)
	out, err := Encode(c)
	if err != nil {
		return report, err
	}
	if !bytes.Equal(out, data) {
		if err := t.writeCatalog(ctx, out, tag); err != nil {
			return report, err
		}
		report.Rewrote = true
	}
	if s == nil {
		return report, nil
	}
	report.Signed, err = t.sign(ctx, s, out)
	return report, err
}

// Unsign deletes catalog.json's signature if there is one: what a writer
// that changes the tree without rewriting catalog.json (prune) does
// first, so the signature never vouches for a tree that is gone.
func (t *Tree) Unsign(ctx context.Context) error {
	if _, err := t.r.Stat(ctx, CatalogSignaturePath); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := t.Delete(ctx, CatalogSignaturePath); err != nil {
		return fmt.Errorf("delete %s: %w", CatalogSignaturePath, err)
	}
	return nil
}

// writeCatalog replaces catalog.json (read with tag), its signature
// deleted first.
func (t *Tree) writeCatalog(ctx context.Context, data []byte, tag string) error {
	if err := t.s.Delete(ctx, CatalogSignaturePath); err != nil {
		return fmt.Errorf("delete %s before %s changes: %w", CatalogSignaturePath, CatalogPath, err)
	}
	return t.apply(ctx, write{rel: CatalogPath, kind: KindCatalog, content: Content{Data: data}, checked: true, tag: tag})
}

// sign writes the signature of doc, the catalog as written, unless the
// one in place still verifies.
func (t *Tree) sign(ctx context.Context, s Sealer, doc []byte) (bool, error) {
	old, err := t.r.ReadFile(ctx, CatalogSignaturePath, MaxSumsBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", CatalogSignaturePath, err)
	}
	if old != nil && s.Signs(doc, old) {
		return false, nil
	}
	sig, err := s.SignArmored(doc)
	if err != nil {
		return false, fmt.Errorf("sign %s of %s: %w", CatalogPath, t.Location(), err)
	}
	if err := t.apply(ctx, write{rel: CatalogSignaturePath, kind: KindFile, content: Content{Data: sig}}); err != nil {
		return false, err
	}
	now, err := t.r.ReadFile(ctx, CatalogPath, MaxDocumentBytes)
	if err != nil || !bytes.Equal(now, doc) {
		// Another writer changed the catalog meanwhile: no signature
		// rather than one of other bytes; its own refresh signs again.
		if derr := t.s.Delete(ctx, CatalogSignaturePath); derr != nil {
			return false, fmt.Errorf("%s changed while it was signed, and its signature cannot be deleted: %w", CatalogPath, derr)
		}
		return false, fmt.Errorf("%s of %s changed while it was signed: its signature is removed; run again to sign it", CatalogPath, t.Location())
	}
	return true, nil
}

// CatalogArchives lists the provider archives of the tree as a sealed
// catalog lists them, by path: each package that a <version>.json lists
// as its own archive in the tree, whose provenance record gives its zh:
// and h1:, both of which the version document lists too. A package
// without such a record is left out (the catalog does not vouch for it).
func (t *Tree) CatalogArchives(ctx context.Context) (map[string]CatalogArchive, error) {
	providers, err := t.Providers(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]CatalogArchive{}
	for _, p := range providers {
		versions, err := t.Versions(ctx, p)
		if errors.Is(err, ErrNotInMirror) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			if err := t.catalogRelease(ctx, p, v, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func (t *Tree) catalogRelease(ctx context.Context, p addrs.Provider, v addrs.Version, out map[string]CatalogArchive) error {
	doc, err := t.ReadVersion(ctx, p, v)
	if err != nil {
		return err
	}
	prov, err := t.ReadProvenance(ctx, p, v)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for name, entry := range doc.Archives {
		plat, err := addrs.ParsePlatform(name)
		if err != nil || entry.URL != ArchiveName(p, v, plat) {
			continue
		}
		a, ok := prov.Archives[name]
		if !ok || a.ZH == "" || a.H1 == "" || !slices.Contains(entry.Hashes, a.ZH) || !slices.Contains(entry.Hashes, a.H1) {
			continue
		}
		ca := CatalogArchive{ZH: a.ZH, H1: a.H1, SBOM: a.SBOM}
		for _, h := range entry.Hashes {
			if strings.HasPrefix(string(h), hashing.SchemeH1) && h != a.H1 {
				ca.H1Zip = h
			}
		}
		out[ArchivePath(p, v, plat)] = ca
	}
	return nil
}

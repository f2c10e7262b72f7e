package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Provenance is what a mirror keeps about where a release came from and how
// it was verified, so the tree can be re-verified and lock files written
// without the origin. It sits next to the release's archives, with the
// upstream SHA256SUMS and its signature kept byte for byte.
type Provenance struct {
	// Archives describes each mirrored platform's package.
	Archives map[string]ProvenanceArchive `json:"archives"`
	// KeyID is the OpenPGP key that verified SHA256SUMS; empty when the
	// origin published no keys and the policy allowed that.
	KeyID string `json:"key_id,omitempty"`
	// Fingerprint, KeyCreated and KeyExpires describe that key: its
	// primary key's fingerprint, when it was made, and when the key (by
	// its newest self-signature) or the signature stops being current
	// (zero: never). Records kept before tfmirror recorded them name the
	// key by KeyID alone.
	Fingerprint string    `json:"fingerprint,omitempty"`
	KeyCreated  time.Time `json:"key_created,omitzero"`
	KeyExpires  time.Time `json:"key_expires,omitzero"`
	// SigningKeys are the ASCII-armored keys the origin advertised.
	SigningKeys []string `json:"signing_keys"`
	// HashesOnly names the upstream that vouched for the archives with
	// hashes alone (a network or filesystem mirror that keeps no
	// signature). The kept SHA256SUMS is then made from the archives'
	// digests, and there is no signature.
	HashesOnly string `json:"hashes_only,omitempty"`
}

// SameSigner reports whether two provenance records of a release say it
// was vouched for alike: verified by the same key, or by the same upstream
// of hashes only, or unsigned with the same keys. The advertised keys of a
// signed release may differ in form: a registry that re-issues its key
// (the same key with a later expiry) serves the new form for old releases
// too, so a mirror built before and one built after keep different bytes
// for the same key. Whoever merges records compares SHA256SUMS and the
// signature byte for byte besides.
func (p Provenance) SameSigner(o Provenance) bool {
	if p.KeyID != o.KeyID || p.HashesOnly != o.HashesOnly {
		return false
	}
	return p.KeyID != "" || slices.Equal(p.SigningKeys, o.SigningKeys)
}

// SetSigner takes the signer of o (its key and what is known of it, or
// the upstream of hashes only), with the advertised keys, for whoever
// merges a publication's record into a kept one.
func (p *Provenance) SetSigner(o Provenance, keys []string) {
	p.KeyID, p.Fingerprint, p.KeyCreated, p.KeyExpires = o.KeyID, o.Fingerprint, o.KeyCreated, o.KeyExpires
	p.SigningKeys, p.HashesOnly = keys, o.HashesOnly
}

// ProvenanceArchive describes one platform's package in a Provenance.
type ProvenanceArchive struct {
	// Filename is the archive's name in the upstream SHA256SUMS.
	Filename string `json:"filename"`
	// H1 is the hash of the unpacked package, the one "tofu init" records.
	H1 hashing.Hash `json:"h1"`
	// ZH and Size identify the archive's bytes, so a rebuild can tell an
	// intact archive from a damaged one without hashing it.
	ZH   hashing.Hash `json:"zh,omitempty"`
	Size int64        `json:"size,omitempty"`
	// SBOM is the file name of the package's SBOM beside the archive
	// (SBOMName); "" for a package published without one (by a tfmirror
	// that made none). GoVersion is the Go toolchain its executable was
	// built with, from its build information; "" when the executable has
	// none (not a Go program) or there is no SBOM.
	SBOM      string `json:"sbom,omitempty"`
	GoVersion string `json:"go_version,omitempty"`
	// Catalog, for a package taken from an upstream mirror whose signed
	// catalog.json listed it (build --catalog-key), names that upstream
	// and the key that signed its catalog.
	Catalog *CatalogVouch `json:"upstream_catalog,omitempty"`
}

// CatalogVouch is an upstream mirror's signed catalog.json that listed a
// package with the digest it has.
type CatalogVouch struct {
	Upstream    string `json:"upstream"`
	KeyID       string `json:"key_id"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

// SamePackage reports whether two entries record the same package: the
// same file, h1:, zh: and size. What is said about its contents (the
// SBOM) is not the package.
func (a ProvenanceArchive) SamePackage(o ProvenanceArchive) bool {
	return a.Filename == o.Filename && a.H1 == o.H1 && a.ZH == o.ZH && a.Size == o.Size
}

// Merged is the entry a publication's record (a) leaves for a package
// the destination records as old. It names the SBOM old names for the
// same package, and none else: the publication names the SBOMs it brings
// itself (layout.Archive.SBOM), so a record never names a file that is
// not there, and one that brings none does not lose the one kept.
func (a ProvenanceArchive) Merged(old ProvenanceArchive) ProvenanceArchive {
	a.SBOM = ""
	if old.SBOM != "" && a.SamePackage(old) {
		a.SBOM, a.GoVersion = old.SBOM, old.GoVersion
	}
	return a
}

// SBOMFor returns the relative path of the SBOM the entry of platform
// plat of p v names, false when it names none or a name that is not the
// one tfmirror gives it (SBOMName): a record never makes a reader leave
// the provider's directory.
func (a ProvenanceArchive) SBOMFor(p addrs.Provider, v addrs.Version, plat string) (string, bool) {
	pl, err := addrs.ParsePlatform(plat)
	if a.SBOM == "" || err != nil || a.SBOM != SBOMName(p, v, pl) {
		return "", false
	}
	return SBOMPath(p, v, pl), true
}

// conventionalName is how providers name their archives:
// terraform-provider-TYPE_VERSION_OS_ARCH.zip.
var conventionalName = regexp.MustCompile(`^terraform-provider-(.+)_([^_]+)_([^_]+_[^_]+)\.zip$`)

// Of reports an error when the entry is another package's than plat of p
// v: a record copied from another provider's or version's release (a tag
// re-pointed by hand, a directory copied over another) names that one's
// archive in its SHA256SUMS and that one's SBOM, all signed by the same
// key when one publisher signs both. An archive name not in the usual
// terraform-provider-TYPE_VERSION_OS_ARCH.zip form says nothing either
// way; the SBOM's name, which tfmirror gives, always does.
func (a ProvenanceArchive) Of(p addrs.Provider, v addrs.Version, plat addrs.Platform) error {
	if m := conventionalName.FindStringSubmatch(a.Filename); m != nil && (m[1] != p.Type || m[2] != v.String() || m[3] != plat.String()) {
		return fmt.Errorf("the provenance of %s %s %s is that of %s: it belongs to another package", p, v, plat, excerpt.Quote(a.Filename))
	}
	if a.SBOM != "" && a.SBOM != SBOMName(p, v, plat) {
		return fmt.Errorf("the provenance of %s %s %s names the SBOM %s, not %s: it belongs to another package", p, v, plat, excerpt.Quote(a.SBOM), SBOMName(p, v, plat))
	}
	return nil
}

// Entry is the record's entry for plat of p v, and whether it has one:
// an error when the entry is another package's (ProvenanceArchive.Of).
func (p Provenance) Entry(prov addrs.Provider, v addrs.Version, plat addrs.Platform) (ProvenanceArchive, bool, error) {
	a, ok := p.Archives[plat.String()]
	if !ok {
		return a, false, nil
	}
	return a, true, a.Of(prov, v, plat)
}

// Record is everything kept about a release's origin.
type Record struct {
	Provenance Provenance
	Sums       []byte // the upstream SHA256SUMS, exact bytes
	Signature  []byte // its detached signature, exact bytes; nil when unsigned
}

// DecodeProvenance parses a provenance record.
func DecodeProvenance(data []byte) (Provenance, error) {
	var p Provenance
	if err := decodeStrict(data, &p); err != nil {
		return Provenance{}, fmt.Errorf("parse provenance: %w", err)
	}
	if p.Archives == nil {
		return Provenance{}, fmt.Errorf("parse provenance: no \"archives\" object")
	}
	return p, nil
}

// ReadProvenance returns a release's provenance record alone, without the
// SHA256SUMS and signature ReadRecord also reads. A release published
// without one yields an error wrapping fs.ErrNotExist.
func (t *Tree) ReadProvenance(ctx context.Context, p addrs.Provider, v addrs.Version) (Provenance, error) {
	data, err := t.r.ReadFile(ctx, ProvenancePath(p, v), MaxDocumentBytes)
	if err != nil {
		return Provenance{}, fmt.Errorf("read provenance of %s %s: %w", p, v, err)
	}
	prov, err := DecodeProvenance(data)
	if err != nil {
		return Provenance{}, fmt.Errorf("%s: %w", ProvenancePath(p, v), err)
	}
	return prov, nil
}

// ReadRecord returns the kept origin files of a release. A release
// published without them yields an error wrapping fs.ErrNotExist.
func (t *Tree) ReadRecord(ctx context.Context, p addrs.Provider, v addrs.Version) (Record, error) {
	var r Record
	var err error
	if r.Provenance, err = t.ReadProvenance(ctx, p, v); err != nil {
		return Record{}, err
	}
	r.Sums, err = t.r.ReadFile(ctx, SumsPath(p, v), MaxSumsBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) && r.Provenance.HashesOnly != "":
		// An upstream's hashes vouched for it: no SHA256SUMS to keep.
	case errors.Is(err, fs.ErrNotExist):
		// Not a release without a record: one whose signed evidence is
		// gone.
		return Record{}, fmt.Errorf("the provenance of %s %s is kept, but %w (%s)", p, v, ErrSumsGone, SumsPath(p, v))
	case err != nil:
		return Record{}, fmt.Errorf("read SHA256SUMS of %s %s: %w", p, v, err)
	}
	r.Signature, err = t.r.ReadFile(ctx, SignaturePath(p, v), MaxSumsBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Record{}, fmt.Errorf("read signature of %s %s: %w", p, v, err)
	}
	return r, nil
}

// ErrSumsGone is why a release whose provenance is kept has no record
// (ReadRecord): its SHA256SUMS is not there, so nothing ties its packages
// to the origin's signature. It is not fs.ErrNotExist: the release is not
// one the tree keeps no record of.
var ErrSumsGone = errors.New("its SHA256SUMS is gone")

// ReadRecord returns the kept origin files of a release
// (Tree.ReadRecord).
func (d TreeDestination) ReadRecord(ctx context.Context, p addrs.Provider, v addrs.Version) (Record, error) {
	return d.t.ReadRecord(ctx, p, v)
}

// KeptSigner is the key a release a tree holds was verified with, as its
// provenance record says.
type KeptSigner struct {
	Version     addrs.Version
	KeyID       string
	Fingerprint string // "" in records kept before fingerprints were
	Created     time.Time
	Expires     time.Time
}

// Signers returns the key that verified each release of p the tree holds
// (Tree.Signers): the history a new release's signer is compared with.
func (d TreeDestination) Signers(ctx context.Context, p addrs.Provider) ([]KeptSigner, error) {
	return d.t.Signers(ctx, p)
}

// SameKey reports whether two kept signers are the same primary key: by
// fingerprint when both are known, else by key ID. A key re-issued with a
// new self-signature, or signing with a new subkey, is the same key.
func (s KeptSigner) SameKey(o KeptSigner) bool {
	if s.Fingerprint != "" && o.Fingerprint != "" {
		return s.Fingerprint == o.Fingerprint
	}
	return s.KeyID != "" && s.KeyID == o.KeyID
}

// Signers returns the key that verified each release of p the tree holds
// (those its index.json lists) and that was signed, in the index's
// order. A release whose provenance record is missing is left out; one
// that cannot be read is an error.
func (t *Tree) Signers(ctx context.Context, p addrs.Provider) ([]KeptSigner, error) {
	idx, err := t.ReadIndex(ctx, p)
	if err != nil {
		return nil, err
	}
	versions, err := idx.versions()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IndexPath(p), err)
	}
	return KeptSigners(ctx, versions, func(ctx context.Context, v addrs.Version) (Provenance, error) {
		if err := t.startRead(ctx); err != nil {
			return Provenance{}, err
		}
		defer t.endRead()
		return t.ReadProvenance(ctx, p, v)
	})
}

// KeptSigners reads the provenance of each version (a few at a time) and
// returns the key that verified each signed one, in the order of
// versions. A version whose record is missing (an error wrapping
// fs.ErrNotExist) is left out; any other error is returned.
func KeptSigners(ctx context.Context, versions []addrs.Version, read func(context.Context, addrs.Version) (Provenance, error)) ([]KeptSigner, error) {
	out := make([]*KeptSigner, len(versions))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(heldParallel)
	for i, v := range versions {
		g.Go(func() error {
			prov, err := read(gctx, v)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case err != nil:
				return err
			case prov.KeyID != "":
				out[i] = &KeptSigner{Version: v, KeyID: prov.KeyID, Fingerprint: prov.Fingerprint, Created: prov.KeyCreated, Expires: prov.KeyExpires}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var signers []KeptSigner
	for _, s := range out {
		if s != nil {
			signers = append(signers, *s)
		}
	}
	return signers, nil
}

// ReadSBOM returns the SBOM of a package, as its release's provenance
// names it. A package published without one yields an error wrapping
// fs.ErrNotExist.
func (t *Tree) ReadSBOM(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) ([]byte, error) {
	prov, err := t.ReadProvenance(ctx, p, v)
	if err != nil {
		return nil, err
	}
	return t.ReadSBOMOf(ctx, p, v, plat, prov.Archives[plat.String()])
}

// ReadSBOMOf is ReadSBOM for a caller that has read the release's
// provenance already: the SBOM entry (the package's entry in it) names.
func (t *Tree) ReadSBOMOf(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform, entry ProvenanceArchive) ([]byte, error) {
	rel, ok := entry.SBOMFor(p, v, plat.String())
	if !ok {
		return nil, fmt.Errorf("%s %s %s: no SBOM recorded: %w", p, v, plat, fs.ErrNotExist)
	}
	data, err := t.r.ReadFile(ctx, rel, MaxSBOMBytes)
	if err != nil {
		return nil, fmt.Errorf("read the SBOM of %s %s %s: %w", p, v, plat, err)
	}
	return data, nil
}

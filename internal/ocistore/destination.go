package ocistore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/layout"
)

// Destination is an OCI registry or image layout as a build's destination
// (mirror.Destination): releases are pushed under the Repair policy, a
// repository template that does not fit a provider is the user's input
// error.
type Destination struct {
	s *Store
	// overwrite re-points a tag that holds other packages: only when the
	// user asked for it (--overwrite-oci-tags).
	overwrite bool
}

// Destination returns the store as a build's destination; overwrite lets
// it re-point version tags that hold other packages.
func (s *Store) Destination(overwrite bool) *Destination {
	return &Destination{s: s, overwrite: overwrite}
}

// Store returns the registry the destination pushes into.
func (d *Destination) Store() *Store { return d.s }

// Location names the registry in messages.
func (d *Destination) Location() string { return d.s.Location() }

// Held returns the queried packages under each version's tag that its
// provenance artifact records with the same bytes. A blob is named by its
// digest, so without verify what the registry lists is taken as what it
// holds. With verify every such package's blob is read again and counts
// only if its bytes are its digest and size: a damaged disk, a broken or
// hostile registry can serve other bytes under a digest. Each tag is
// resolved once: the record read is the one of the index whose packages
// were listed.
func (d *Destination) Held(ctx context.Context, p addrs.Provider, queries []layout.HeldQuery, verify bool) ([]layout.HeldPackage, error) {
	var out []layout.HeldPackage
	for _, q := range queries {
		held, err := d.heldVersion(ctx, p, q, verify)
		if err != nil {
			return out, err
		}
		out = append(out, held...)
	}
	return out, nil
}

func (d *Destination) heldVersion(ctx context.Context, p addrs.Provider, q layout.HeldQuery, verify bool) ([]layout.HeldPackage, error) {
	rel, found, err := d.s.Release(ctx, p, q.Version)
	if err != nil || !found {
		return nil, err
	}
	rec, err := d.s.RecordOf(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no provenance: publish again, to add it
	}
	if err != nil {
		return nil, err
	}
	var out []layout.HeldPackage
	for _, plat := range q.Platforms {
		a, ok := rel.Archive(plat)
		prov, recorded, err := rec.Provenance.Entry(p, q.Version, plat)
		if ok && recorded && err == nil && prov.ZH == a.ZH && prov.Size == a.Size && (!verify || d.intact(ctx, p, q.Version, a)) {
			out = append(out, layout.HeldPackage{Version: q.Version, Platform: plat, ZH: a.ZH, Size: a.Size, KeyID: rec.Provenance.KeyID, HashesOnly: rec.Provenance.HashesOnly,
				SBOM: prov.SBOM != ""})
		}
	}
	return out, nil
}

// intact reads a package's blob again and reports whether its bytes are
// its digest and size.
func (d *Destination) intact(ctx context.Context, p addrs.Provider, v addrs.Version, a Archive) bool {
	t, name, err := d.s.open(p)
	if err != nil {
		return false
	}
	return blobIntact(ctx, t, archiveLayer(a), fmt.Sprintf("%s %s %s package in %s", p, v, a.Platform, name)) == nil
}

// PutArchiveAhead uploads an archive's blob before the release's push.
func (d *Destination) PutArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a layout.Archive) error {
	return templateInput(d.s.PushArchiveAhead(ctx, p, v, a))
}

// Publish pushes the release under the build's policy: the provenance is
// repaired, a package with other bytes is refused. A repository template
// that does not fit the build's providers (an invalid repository name,
// one repository for two providers) is an input error: the store found it
// while the build planned (Held names every provider first) and pushes
// nothing through it.
func (d *Destination) Publish(ctx context.Context, rel layout.Release) error {
	_, err := d.s.Push(ctx, rel, PushOptions{Policy: layout.Repair, Overwrite: d.overwrite})
	return templateInput(err)
}

// templateInput makes a repository template that does not fit a provider
// the user's input error; any other error is returned as it is.
func templateInput(err error) error {
	if errors.Is(err, ErrTemplate) {
		return inputerr.Wrap(err)
	}
	return err
}

// HeldModule reports the package the version's tag names; a registry
// keeps no module records.
func (d *Destination) HeldModule(ctx context.Context, m addrs.Module, v addrs.Version) (layout.HeldModule, error) {
	pkg, found, err := d.s.ReadModule(ctx, m, v)
	if err != nil || !found {
		return layout.HeldModule{}, err
	}
	sum, ok := cutSHA256(pkg.Layer)
	return layout.HeldModule{Found: ok, SHA256: sum}, nil
}

// PublishModule pushes a module package; a tag that names another package
// is refused unless the user asked to overwrite tags.
func (d *Destination) PublishModule(ctx context.Context, r layout.ModuleRelease) error {
	_, err := d.s.PushModule(ctx, r.Module, r.Version, r.Staged, r.Record.SHA256, r.Record.Size, d.overwrite)
	return err
}

// OpenModuleArchive streams the package the version's tag names.
func (d *Destination) OpenModuleArchive(ctx context.Context, m addrs.Module, v addrs.Version) (io.ReadCloser, error) {
	pkg, found, err := d.s.ReadModule(ctx, m, v)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("module %s %s in %s: %w", m.ForDisplay(), v, d.s.Location(), fs.ErrNotExist)
	}
	return d.s.OpenModule(ctx, m, pkg)
}

// cutSHA256 returns the hex digest of a "sha256:" digest.
func cutSHA256(digest string) (string, bool) {
	const prefix = "sha256:"
	if len(digest) != len(prefix)+64 || digest[:len(prefix)] != prefix {
		return "", false
	}
	return digest[len(prefix):], true
}

// ListVersions returns the versions the provider's repository tags; a
// provider the registry does not hold is a problem of the mirror, a
// registry that cannot be read an error.
func (s *Store) ListVersions(ctx context.Context, p addrs.Provider) ([]addrs.Version, []layout.Problem, error) {
	versions, err := s.Versions(ctx, p)
	if errors.Is(err, layout.ErrNotInMirror) {
		return nil, []layout.Problem{{Path: p.String(), Message: err.Error()}}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return versions, nil, nil
}

// ListVersion returns what OpenTofu reads of the version's tag: per
// platform, the zh: hash of its archive (the layer's digest). Problems are
// reported at repository:tag.
func (s *Store) ListVersion(ctx context.Context, p addrs.Provider, v addrs.Version) layout.Listing {
	name := s.Name(p, v)
	l := layout.Listing{Where: name, Sums: name, Signature: name, Provenance: name}
	rel, found, err := s.Release(ctx, p, v)
	if err == nil && !found {
		err = fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		l.Problems = append(l.Problems, layout.Problem{Path: name, Message: err.Error()})
		return l
	}
	l.Packages = make(map[addrs.Platform]layout.ListedPackage, len(rel.Archives))
	for _, a := range rel.Archives {
		l.Packages[a.Platform] = layout.ListedPackage{Hashes: []hashing.Hash{a.ZH}, Archive: name}
	}
	return l
}

// ReadRecord returns what the registry kept of a release's origin (its
// provenance artifact): what --recheck compares the origin's evidence
// with. A version the registry does not hold is an error wrapping
// fs.ErrNotExist.
func (d *Destination) ReadRecord(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error) {
	return d.s.ReadRecord(ctx, p, v)
}

// Signers returns the key that verified each release of p the registry
// holds, from each version's provenance artifact: the history a new
// release's signer is compared with (key continuity). A repository that
// does not exist yet has none.
func (d *Destination) Signers(ctx context.Context, p addrs.Provider) ([]layout.KeptSigner, error) {
	versions, err := d.s.Versions(ctx, p)
	if errors.Is(err, layout.ErrNotInMirror) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return layout.KeptSigners(ctx, versions, func(ctx context.Context, v addrs.Version) (layout.Provenance, error) {
		rec, err := d.s.ReadRecord(ctx, p, v)
		return rec.Provenance, err
	})
}

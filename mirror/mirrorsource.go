package mirror

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// MirrorSource is a built mirror as the origin of a build: a directory,
// a bucket, a published URL or an OCI registry or layout. It offers what
// the mirror holds, with the SHA256SUMS, signature and signing keys the
// mirror kept of each release's origin, so a build from it makes the
// same trust decision and the same checks as a build from the origin
// itself, and never contacts the origin. A release the mirror keeps no
// provenance for offers nothing, unless Hashed reads the same mirror's
// hashes: a network mirror another tool made, whose hashes alone then
// vouch for its packages. The locations it gives read the mirror's files
// (Packages), or the kept record.
type MirrorSource struct {
	Mirror Packages
	Hashed *HashedSource
	// Catalog, if set, is the mirror's signed catalog.json: only what it
	// lists is offered, with the digest it lists.
	Catalog *SignedCatalog
	// Deprecations, if not nil, are the warnings the mirror keeps of its
	// providers' origins (its catalog.json's "deprecations", by
	// provider): a build from it reports and keeps them as a build from
	// the origin does, and a provider without any has none. Nil: the
	// mirror says nothing of warnings (it is not a tree tfmirror wrote),
	// so a build keeps what it had.
	Deprecations map[string][]string

	mu      sync.Mutex
	records map[string]*layout.Record
}

// AvailableVersions lists the versions the mirror holds.
func (s *MirrorSource) AvailableVersions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	versions, err := s.Mirror.Versions(ctx, p)
	return mirrorVersions(s.Mirror.Location(), versions, err)
}

// ProviderListing lists the versions the mirror holds, with the warnings
// it keeps of p when it keeps any (Deprecations).
func (s *MirrorSource) ProviderListing(ctx context.Context, p addrs.Provider) (Listing, error) {
	vs, err := s.AvailableVersions(ctx, p)
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Releases: unlisted(vs)}
	if s.Deprecations != nil {
		l.Warnings, l.CanWarn = s.Deprecations[p.String()], true
	}
	return l, nil
}

// PackageMeta describes a package from the release's kept provenance,
// checked against the signed catalog if there is one.
func (s *MirrorSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	meta, err := s.packageMeta(ctx, p, v, plat)
	if err != nil || s.Catalog == nil {
		return meta, err
	}
	return meta, s.Catalog.vouch(s.Mirror.Location(), Package{Provider: p, Version: v, Platform: plat}, &meta)
}

func (s *MirrorSource) packageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	rec, err := s.record(ctx, p, v)
	if s.Hashed != nil && errors.Is(err, fs.ErrNotExist) {
		return s.Hashed.PackageMeta(ctx, p, v, plat)
	}
	if err != nil {
		return PackageMeta{}, err
	}
	a, ok, err := rec.Provenance.Entry(p, v, plat)
	if !ok {
		return PackageMeta{}, fmt.Errorf("%s holds no %s package of %s %s: %w", s.Mirror.Location(), plat, p, v, ErrPlatformUnavailable)
	}
	if err != nil {
		return PackageMeta{}, &VerificationError{Package: Package{Provider: p, Version: v, Platform: plat}, Problem: s.Mirror.Location() + " holds another package in its place", Err: err}
	}
	sum, err := a.ZH.ZHDigest()
	if err != nil {
		return PackageMeta{}, fmt.Errorf("%s: %s %s %s: the provenance records no valid zh: hash (%q)", s.Mirror.Location(), p, v, plat, a.ZH)
	}
	meta := PackageMeta{
		Filename:    a.Filename,
		Archive:     s.archive(p, v, plat),
		Sums:        s.kept(p, v, "SHA256SUMS", rec.Sums),
		Signature:   s.kept(p, v, "SHA256SUMS signature", rec.Signature),
		SHA256:      sum,
		SigningKeys: rec.Provenance.SigningKeys,
		Size:        a.Size,
	}
	if rec.Provenance.HashesOnly != "" {
		// What the mirror's own upstream vouched for with hashes is no
		// more than that here: its kept SHA256SUMS lists the digests.
		meta.HashesOnly, meta.Signature, meta.SigningKeys = rec.Provenance.HashesOnly+", via "+s.Mirror.Location(), nil, nil
	}
	return meta, nil
}

// archive is the location of a package's archive in the mirror.
func (s *MirrorSource) archive(p addrs.Provider, v addrs.Version, plat addrs.Platform) Location {
	return locationFunc{
		name: fmt.Sprintf("%s: %s %s %s", s.Mirror.Location(), p, v, plat),
		fetch: func(ctx context.Context, sink Sink) error {
			body, err := s.Mirror.OpenArchive(ctx, p, v, plat)
			if err != nil {
				return fmt.Errorf("%s: %s %s %s: %w", s.Mirror.Location(), p, v, plat, err)
			}
			defer body.Close()
			if err := CopyArchive(sink, body); err != nil {
				return fmt.Errorf("%s: %s %s %s: %w", s.Mirror.Location(), p, v, plat, err)
			}
			return nil
		},
	}
}

// kept is the location of a document the mirror kept of a release's
// origin (name says which: its SHA256SUMS or signature), read with the
// release's record.
func (s *MirrorSource) kept(p addrs.Provider, v addrs.Version, name string, doc []byte) Location {
	return locationFunc{
		name: fmt.Sprintf("%s: %s %s %s", s.Mirror.Location(), p, v, name),
		fetch: func(_ context.Context, sink Sink) error {
			_, err := sink.Write(doc)
			return err
		},
	}
}

// record reads a release's kept record once.
func (s *MirrorSource) record(ctx context.Context, p addrs.Provider, v addrs.Version) (*layout.Record, error) {
	key := p.String() + " " + v.String()
	s.mu.Lock()
	rec, ok := s.records[key]
	s.mu.Unlock()
	if ok {
		return rec, nil
	}
	r, err := s.Mirror.ReadRecord(ctx, p, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: the mirror keeps no provenance of the release's origin, so nothing can verify it: %w", s.Mirror.Location(), p, v, err)
	}
	s.mu.Lock()
	if s.records == nil {
		s.records = map[string]*layout.Record{}
	}
	s.records[key] = &r
	s.mu.Unlock()
	return &r, nil
}

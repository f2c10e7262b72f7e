package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/chunkio"
	"github.com/tfmirror/tfmirror/layout"
)

// HashedPackages is an upstream that vouches for its packages with hashes
// alone: a network mirror another tool made (its <version>.json lists h1:
// or zh: hashes), or a filesystem mirror (whose reader computes the hash of
// what the directory holds). It keeps no SHA256SUMS and no signature.
type HashedPackages interface {
	// Location names the upstream in messages; it never holds a secret.
	Location() string
	// Versions lists the versions the upstream holds of a provider; it
	// wraps layout.ErrNotInMirror when it holds none.
	Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error)
	// Describe says where a package is and what hashes vouch for it; it
	// wraps ErrPlatformUnavailable when the release has no such platform.
	Describe(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (HashedPackage, error)
	// Platforms lists the platforms the upstream holds of a version.
	Platforms(ctx context.Context, p addrs.Provider, v addrs.Version) ([]addrs.Platform, error)
	// Fetch copies the archive Describe named by ref into sink, as
	// Location.Fetch does.
	Fetch(ctx context.Context, ref string, sink Sink) error
}

// HashedPackage is a package of a HashedPackages upstream.
type HashedPackage struct {
	// Ref tells the upstream's Fetch where the archive is. The archive's
	// Location is named by the package, not by its Ref.
	Ref string
	// Hashes vouch for the package: h1: of its content, zh: of the zip.
	Hashes []hashing.Hash
	// Size is the archive's length when the upstream knows it, else 0.
	Size int64
}

// HashedSource is a HashedPackages upstream as a build's source. Every
// package it offers is marked as vouched for by hashes alone, which the
// trust policy accepts with a warning or refuses (Authenticate), and its
// download must match the upstream's hashes. The archive's location
// fetches it from the upstream by its Ref.
type HashedSource struct {
	// Name says which upstream it is, in messages and in the provenance
	// kept for what it gave ("network_mirror https://...").
	Name     string
	Upstream HashedPackages
}

// AvailableVersions lists the versions the upstream holds.
func (s *HashedSource) AvailableVersions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	versions, err := s.Upstream.Versions(ctx, p)
	return mirrorVersions(s.Upstream.Location(), versions, err)
}

// mirrorVersions is what a mirror's version list means to a build: a
// provider the mirror does not hold is one the source does not know.
func mirrorVersions(location string, versions addrs.VersionList, err error) (addrs.VersionList, error) {
	if errors.Is(err, layout.ErrNotInMirror) {
		return nil, fmt.Errorf("%s: %w", location, ErrProviderUnknown)
	}
	return versions, err
}

// PackageMeta describes a package by the hashes the upstream lists.
func (s *HashedSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	hp, err := s.Upstream.Describe(ctx, p, v, plat)
	if err != nil {
		return PackageMeta{}, err
	}
	meta := PackageMeta{
		Filename:   layout.ArchiveName(p, v, plat),
		Size:       hp.Size,
		HashesOnly: s.Name,
	}
	for _, h := range hp.Hashes {
		switch {
		case strings.HasPrefix(string(h), hashing.SchemeZH):
			sum, err := hashing.ParseHex(strings.TrimPrefix(string(h), hashing.SchemeZH))
			if err != nil {
				return PackageMeta{}, fmt.Errorf("%s: %s %s %s: %w", s.Upstream.Location(), p, v, plat, err)
			}
			if meta.digestKnown() && meta.SHA256 != sum {
				return PackageMeta{}, fmt.Errorf("%s: %s %s %s: lists two zh: hashes for one archive", s.Upstream.Location(), p, v, plat)
			}
			meta.SHA256 = sum
		case strings.HasPrefix(string(h), hashing.SchemeH1):
			meta.H1 = append(meta.H1, h)
		}
	}
	if !meta.digestKnown() && len(meta.H1) == 0 {
		return PackageMeta{}, fmt.Errorf("%s: %s %s %s: the upstream lists no h1: or zh: hash, so nothing could check the archive", s.Upstream.Location(), p, v, plat)
	}
	meta.Archive = locationFunc{
		name: fmt.Sprintf("%s: %s %s %s", s.Upstream.Location(), p, v, plat),
		fetch: func(ctx context.Context, sink Sink) error {
			return s.Upstream.Fetch(ctx, hp.Ref, sink)
		},
	}
	return meta, nil
}

// Packages is the upstream as a mirror that keeps no record of any
// release: it lists versions, and every ReadRecord wraps fs.ErrNotExist,
// so a MirrorSource or Locker with this HashedSource as its Hashed reads
// every release by its hashes.
func (s *HashedSource) Packages() Packages { return hashedPackages{s} }

type hashedPackages struct{ s *HashedSource }

func (h hashedPackages) Location() string { return h.s.Upstream.Location() }

func (h hashedPackages) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	return h.s.Upstream.Versions(ctx, p)
}

func (h hashedPackages) ReadRecord(context.Context, addrs.Provider, addrs.Version) (layout.Record, error) {
	return layout.Record{}, fmt.Errorf("%s keeps no record of a release's origin: %w", h.Location(), fs.ErrNotExist)
}

func (h hashedPackages) OpenArchive(context.Context, addrs.Provider, addrs.Version, addrs.Platform) (io.ReadCloser, error) {
	return nil, fmt.Errorf("%s: archives are read by their hashes: %w", h.Location(), fs.ErrNotExist)
}

func (h hashedPackages) ReadSBOM(context.Context, addrs.Provider, addrs.Version, addrs.Platform) ([]byte, error) {
	return nil, fmt.Errorf("%s keeps no SBOM: %w", h.Location(), fs.ErrNotExist)
}

// checkListedHashes requires an archive to unpack to one of the h1:
// hashes its upstream listed, if it listed any.
func checkListedHashes(pkg Package, meta PackageMeta, sums hashing.ArchiveSums) error {
	if len(meta.H1) == 0 || slices.Contains(meta.H1, sums.H1) || slices.Contains(meta.H1, sums.H1Unpacked) {
		return nil
	}
	return &VerificationError{Package: pkg, Problem: fmt.Sprintf(
		"archive unpacks to %s, but %s lists %s", sums.H1Unpacked, upstreamName(meta), joinHashes(meta.H1))}
}

// CopyArchive copies an archive's bytes into sink, in chunks
// (chunkio.Copy), refusing more than the sink takes (a sink with a Limit)
// with ErrTooLarge.
func CopyArchive(sink Sink, body io.Reader) error {
	limit := int64(chunkio.NoLimit)
	if l, ok := sink.(interface{ Limit() int64 }); ok && l.Limit() > 0 {
		limit = l.Limit()
	}
	_, err := chunkio.CopyLimited(sink, body, limit)
	if errors.Is(err, chunkio.ErrPastLimit) {
		return ErrTooLarge
	}
	return err
}

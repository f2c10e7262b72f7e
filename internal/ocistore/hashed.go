package ocistore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/mirror"
)

// Hashed reads a registry (or image layouts) as an upstream of releases
// it keeps no provenance of: one filled with the oras CLI as OpenTofu's
// documentation shows, or by any other tool, in the shape OpenTofu's
// oci_mirror reads. Nothing of the release's origin is there (no
// SHA256SUMS, signature or keys): the digest of each platform's
// archive/zip layer, its zh: hash, is all that vouches for the package,
// as the hashes of a network mirror another tool made do. Releases are
// read as OpenTofu reads them, with the Store's bounds (bounds.go), and a
// layer is refused when its descriptor says nothing (0 bytes) or more
// than the most a download may bring.
type Hashed struct {
	s *Store
	// maxArchive refuses a layer of more bytes; 0: no limit.
	maxArchive int64

	mu sync.Mutex
	// layers are the packages Describe named, by their Ref, for Fetch.
	layers map[string]describedLayer
}

// describedLayer is a package as Describe read it.
type describedLayer struct {
	release taggedRelease
	archive Archive
}

var _ mirror.HashedPackages = (*Hashed)(nil)

// NewHashed reads what s reads; a package's layer of more than
// maxArchiveBytes is refused (0: no limit).
func NewHashed(s *Store, maxArchiveBytes int64) *Hashed {
	return &Hashed{s: s, maxArchive: maxArchiveBytes, layers: map[string]describedLayer{}}
}

// Location is the registry's repository template (or the layouts'
// directory), as the Store names it.
func (h *Hashed) Location() string { return h.s.Location() }

// Versions lists the versions whose tags the provider's repository holds.
func (h *Hashed) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	return h.s.Versions(ctx, p)
}

// Platforms lists the platforms the version's index holds a manifest for,
// as OpenTofu selects them.
func (h *Hashed) Platforms(ctx context.Context, p addrs.Provider, v addrs.Version) ([]addrs.Platform, error) {
	r, err := h.s.readTagged(ctx, p, v)
	if err != nil {
		return nil, err
	}
	return slices.SortedFunc(maps.Keys(r.entries), func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) }), nil
}

// Describe reads the version's index and the platform's manifest: the
// package's layer, whose digest is its zh: hash.
func (h *Hashed) Describe(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (mirror.HashedPackage, error) {
	r, err := h.s.readTagged(ctx, p, v)
	if err != nil {
		return mirror.HashedPackage{}, err
	}
	entry, ok := r.entries[plat]
	if !ok {
		return mirror.HashedPackage{}, fmt.Errorf("%s holds no %s package of %s %s: %w", r.ref, plat, p, v, mirror.ErrPlatformUnavailable)
	}
	a, err := readArchive(ctx, r.t, plat, entry)
	if err != nil {
		return mirror.HashedPackage{}, h.s.fail("read", p, v.String(), r.ref, err)
	}
	if err := h.checkSize(a); err != nil {
		return mirror.HashedPackage{}, h.s.fail("read", p, v.String(), r.ref, err)
	}
	ref := fmt.Sprintf("%s %s %s", p, v, plat)
	r.entries = nil // Fetch needs the repository, not the other platforms
	h.mu.Lock()
	h.layers[ref] = describedLayer{release: r, archive: a}
	h.mu.Unlock()
	return mirror.HashedPackage{Ref: ref, Hashes: []hashing.Hash{a.ZH}, Size: a.Size}, nil
}

// checkSize refuses a layer whose descriptor gives no size, or more than
// a download may bring.
func (h *Hashed) checkSize(a Archive) error {
	switch {
	case a.Size <= 0:
		return shapeError("%s: the package layer %s has a size of %d bytes", a.Platform, a.Digest, a.Size)
	case h.maxArchive > 0 && a.Size > h.maxArchive:
		return fmt.Errorf("%s: the package layer %s has %d bytes, more than the %d a download may bring: %w",
			a.Platform, a.Digest, a.Size, h.maxArchive, mirror.ErrTooLarge)
	}
	return nil
}

// Fetch streams the package Describe named by ref into sink, checked
// against its layer's size and digest.
func (h *Hashed) Fetch(ctx context.Context, ref string, sink mirror.Sink) error {
	h.mu.Lock()
	d, ok := h.layers[ref]
	h.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %s was not described first", h.Location(), ref)
	}
	rc, err := h.s.openLayer(ctx, d.release, d.archive)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := mirror.CopyArchive(sink, rc); err != nil {
		r := d.release
		return fmt.Errorf("%s %s %s package %s in %s: %w", r.p, r.v, d.archive.Platform, d.archive.Digest, r.ref, err)
	}
	return nil
}

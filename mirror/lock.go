package mirror

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/syncx"
	"github.com/tfmirror/tfmirror/layout"
)

// LockEntry is what a lock file records for one provider.
type LockEntry struct {
	Provider addrs.Provider
	Version  addrs.Version
	Hashes   []hashing.Hash
	// Packages are the sums of each platform's package the entry covers:
	// what a client installing that platform from the mirror checks the
	// lock file against and records.
	Packages map[addrs.Platform]hashing.ArchiveSums
}

// LockedError is a version a lock file pins that "tofu init" cannot
// install from the mirror: the configuration's constraints exclude it, or
// the mirror does not hold it. Init fails on either.
type LockedError struct {
	Provider addrs.Provider
	Version  addrs.Version
	// As is the provider the lock file names, when not Provider
	// (Need.LockedAs).
	As addrs.Provider
	// Constraints are the configuration's, as written; NotAllowed says
	// they exclude Version (otherwise the mirror does not hold it).
	Constraints string
	NotAllowed  bool
}

func (e *LockedError) Error() string {
	pinned := fmt.Sprintf("%s %s", e.Provider, e.Version)
	if !e.As.IsZero() && !e.As.Equals(e.Provider) {
		pinned = fmt.Sprintf("%s %s (taken for %s, as OpenTofu does)", e.As, e.Version, e.Provider)
	}
	if e.NotAllowed {
		return fmt.Sprintf("the lock file pins %s, which does not satisfy the configuration's constraints %q; run init -upgrade or fix the constraints", pinned, e.Constraints)
	}
	return fmt.Sprintf("the lock file pins %s, which the mirror does not hold", pinned)
}

// Locker computes lock file entries from a built mirror, offline from the
// origin: it re-authenticates the kept SHA256SUMS, signature and keys
// under the trust policy (the build's decision), then records the h1: of
// every requested platform's unpacked package and a zh: for every line of
// SHA256SUMS, exactly the hashes "tofu providers lock" records from the
// origin.
//
// The h1: hashes are computed from the archives themselves, after checking
// their bytes against the signed SHA256SUMS: a provenance record is not
// signed, so nothing it says is copied into a lock file on trust.
type Locker struct {
	Mirror  Packages
	Checker SignatureChecker
	Trust   TrustPolicy
	// Limits bound what an archive may unpack to; a zero field takes
	// hashing.DefaultZipLimits' (ZipLimits.WithDefaults).
	Limits hashing.ZipLimits
	// TempDir holds archives of a remote mirror while they are hashed;
	// "" means the system's.
	TempDir string
	// Hashed, if set, reads the releases Mirror keeps no record of by the
	// upstream's hashes alone (see lockHashed).
	Hashed *HashedSource
	// Catalog, if set, are the archives of a catalog.json whose signature
	// by a key the operator named was checked, by path: it vouches for
	// the hashes it lists, so a package it covers is not downloaded.
	Catalog map[string]layout.CatalogArchive
	// Fallback, if set, is told why a package is downloaded although
	// Catalog is set.
	Fallback func(pkg Package, why string)

	// Each archive is read and hashed once per Locker, however many
	// lock files (or a check, then a fix) ask for it.
	hashing  syncx.KeyedMutex
	mu       sync.Mutex
	computed map[string]hashing.ArchiveSums
	listed   map[string]layout.Listing // by "provider version": read once
}

// Lock selects the version a root module would install from the mirror
// (the locked one, else the newest allowed) and returns its lock entry. An
// empty platforms list means every platform the mirror holds for it.
func (l *Locker) Lock(ctx context.Context, n Need, platforms []addrs.Platform) (LockEntry, error) {
	v, err := l.selectVersion(ctx, n)
	if err != nil {
		return LockEntry{}, err
	}
	rec, err := l.Mirror.ReadRecord(ctx, n.Provider, v)
	if l.Hashed != nil && errors.Is(err, fs.ErrNotExist) {
		entry, err := l.lockHashed(ctx, Package{Provider: n.Provider, Version: v}, platforms)
		if err != nil {
			return LockEntry{}, fmt.Errorf("%s: %w", n.Root, err)
		}
		return entry, nil
	}
	if err != nil {
		return LockEntry{}, fmt.Errorf("%s: %s %s: %w", n.Root, n.Provider, v, err)
	}
	sums, err := l.verify(n.Provider, v, rec)
	if err != nil {
		return LockEntry{}, err
	}
	packages, err := l.platformHashes(ctx, Package{Provider: n.Provider, Version: v}, rec.Provenance, sums, platforms)
	if err != nil {
		return LockEntry{}, fmt.Errorf("%s: %w", n.Root, err)
	}
	if err := l.checkListing(ctx, Package{Provider: n.Provider, Version: v}, packages); err != nil {
		return LockEntry{}, fmt.Errorf("%s: %w", n.Root, err)
	}
	hashes := sums.ZHashes()
	for _, p := range packages {
		hashes = append(hashes, packageH1s(p)...)
	}
	slices.Sort(hashes)
	return LockEntry{Provider: n.Provider, Version: v, Hashes: slices.Compact(hashes), Packages: packages}, nil
}

// listingReader is a mirror whose version documents can be read: what a
// network mirror's clients check each package against.
type listingReader interface {
	ListVersion(ctx context.Context, p addrs.Provider, v addrs.Version) layout.Listing
}

// checkListing refuses a version whose document lists, for a platform
// locked, a hash its package does not have: init through the mirror
// checks the package against every hash listed and fails, whatever the
// lock file says, so no lock file of it can be right.
func (l *Locker) checkListing(ctx context.Context, rel Package, packages map[addrs.Platform]hashing.ArchiveSums) error {
	lr, ok := l.Mirror.(listingReader)
	if !ok {
		return nil
	}
	key := rel.Provider.String() + " " + rel.Version.String()
	l.mu.Lock()
	listing, ok := l.listed[key]
	l.mu.Unlock()
	if !ok {
		listing = lr.ListVersion(ctx, rel.Provider, rel.Version)
		l.mu.Lock()
		if l.listed == nil {
			l.listed = map[string]layout.Listing{}
		}
		l.listed[key] = listing
		l.mu.Unlock()
	}
	for _, plat := range slices.SortedFunc(maps.Keys(packages), comparePlatforms) {
		known := packages[plat].All()
		for _, h := range listing.Packages[plat].Hashes {
			if !slices.Contains(known, h) {
				pkg := rel
				pkg.Platform = plat
				return &VerificationError{Package: pkg, Problem: fmt.Sprintf("%s lists %s for it, which its archive does not match: init through the mirror fails (tfmirror verify shows what else is wrong)", listing.Where, h)}
			}
		}
	}
	return nil
}

// packageH1s are the h1: hashes a lock records for one platform's
// package: the unpacked directory's, which every client records, and the
// zip's when it differs (a zip with directory entries), which OpenTofu
// records too when it installs from a mirror that lists it, as a tfmirror
// mirror does; without it the first such init would rewrite the file.
func packageH1s(p hashing.ArchiveSums) []hashing.Hash {
	if p.H1 == "" || p.H1 == p.H1Unpacked {
		return []hashing.Hash{p.H1Unpacked}
	}
	return []hashing.Hash{p.H1Unpacked, p.H1}
}

// selectVersion picks what "tofu init" would install from the mirror.
// Asking for something the mirror cannot satisfy is an input error.
func (l *Locker) selectVersion(ctx context.Context, n Need) (addrs.Version, error) {
	inputErr := func(format string, args ...any) error {
		return &ResolveError{Provider: n.Provider, Input: true, Err: fmt.Errorf("%s: "+format, append([]any{n.Root}, args...)...)}
	}
	allowed, err := addrs.ParseConstraints(strings.Join(n.Constraints, ", "))
	if err != nil {
		return addrs.Version{}, inputErr("%w", err)
	}
	available, err := l.Mirror.Versions(ctx, n.Provider)
	if errors.Is(err, layout.ErrNotInMirror) {
		return addrs.Version{}, inputErr("%w", err)
	}
	if err != nil {
		return addrs.Version{}, fmt.Errorf("%s: %w", n.Root, err)
	}
	constraints := strings.Join(n.Constraints, ", ")
	if n.Locked != nil {
		if !allowed.Has(*n.Locked) {
			return addrs.Version{}, inputErr("%w", &LockedError{Provider: n.Provider, Version: *n.Locked, As: n.LockedAs, Constraints: constraints, NotAllowed: true})
		}
		// The very version: init takes a version with other build
		// metadata (1.0.0+meta against 1.0.0) for another, not held.
		if !slices.Contains(available, *n.Locked) {
			return addrs.Version{}, inputErr("%w", &LockedError{Provider: n.Provider, Version: *n.Locked, As: n.LockedAs, Constraints: constraints})
		}
		return *n.Locked, nil
	}
	matched := slices.Clone(available).Filter(allowed)
	if len(matched) == 0 {
		return addrs.Version{}, inputErr("the mirror holds no version of %s that matches %q (newest held: %s)", n.Provider, constraints, slices.Clone(available).Newest())
	}
	return matched.Newest(), nil
}

// verify re-authenticates the kept SHA256SUMS under the trust policy.
func (l *Locker) verify(p addrs.Provider, v addrs.Version, rec layout.Record) (hashing.Sums, error) {
	verdict, err := l.Trust.Authenticate(l.Checker, Package{Provider: p, Version: v}, KeptEvidence(rec))
	return verdict.Sums, err
}

// platformHashes returns the sums of each platform's package, all of them
// when platforms is empty, each computed from an archive whose bytes the
// signed SHA256SUMS lists. A provenance record that says otherwise was
// tampered with.
func (l *Locker) platformHashes(ctx context.Context, rel Package, prov layout.Provenance, sums hashing.Sums, platforms []addrs.Platform) (map[addrs.Platform]hashing.ArchiveSums, error) {
	names := make([]string, 0, len(platforms))
	for _, plat := range platforms {
		names = append(names, plat.String())
	}
	if len(names) == 0 {
		names = slices.Sorted(maps.Keys(prov.Archives))
	}
	out := make(map[addrs.Platform]hashing.ArchiveSums, len(names))
	for _, name := range names {
		plat, computed, err := l.platformHash(ctx, rel, prov, sums, name)
		if err != nil {
			return nil, err
		}
		out[plat] = computed
	}
	return out, nil
}

func (l *Locker) platformHash(ctx context.Context, rel Package, prov layout.Provenance, sums hashing.Sums, name string) (addrs.Platform, hashing.ArchiveSums, error) {
	var none hashing.ArchiveSums
	plat, err := addrs.ParsePlatform(name)
	if err != nil {
		return addrs.Platform{}, none, fmt.Errorf("%s %s: provenance: %w", rel.Provider, rel.Version, err)
	}
	a, ok, err := prov.Entry(rel.Provider, rel.Version, plat)
	if !ok {
		return addrs.Platform{}, none, &ResolveError{Provider: rel.Provider, Input: true, Err: fmt.Errorf("%s %s: the mirror has no %s package", rel.Provider, rel.Version, name)}
	}
	pkg := Package{Provider: rel.Provider, Version: rel.Version, Platform: plat}
	if err != nil {
		return plat, none, &VerificationError{Package: pkg, Problem: "the mirror holds another package in its place", Err: err}
	}
	digest, ok := sums[a.Filename]
	if !ok {
		return plat, none, &VerificationError{Package: pkg, Problem: fmt.Sprintf("the signed SHA256SUMS has no line for %q", a.Filename)}
	}
	if listed, why := l.vouched(pkg, a, digest); why == "" {
		return plat, listed.Sums(), nil
	} else if l.Fallback != nil {
		l.Fallback(pkg, why)
	}
	computed, err := l.archiveSums(ctx, pkg, digest)
	if err != nil {
		return plat, none, &VerificationError{Package: pkg, Problem: "the archive cannot be checked", Err: err}
	}
	if a.H1 != computed.H1Unpacked {
		return plat, none, &VerificationError{Package: pkg, Problem: fmt.Sprintf("the provenance record says %s, but the signed archive unpacks to %s", a.H1, computed.H1Unpacked)}
	}
	return plat, computed, nil
}

// archiveSums are the hashes of the package's archive, whose bytes must
// have the signed digest: computed the first time they are asked for.
func (l *Locker) archiveSums(ctx context.Context, pkg Package, digest [sha256.Size]byte) (hashing.ArchiveSums, error) {
	key := pkg.String() + " " + string(hashing.ZH(digest))
	defer l.hashing.Lock(key)()
	l.mu.Lock()
	sums, ok := l.computed[key]
	l.mu.Unlock()
	if ok {
		return sums, nil
	}
	sums, err := signedArchiveSums(ctx, l.Mirror, pkg, digest, l.Limits, l.TempDir)
	if err != nil {
		return sums, err
	}
	l.mu.Lock()
	if l.computed == nil {
		l.computed = map[string]hashing.ArchiveSums{}
	}
	l.computed[key] = sums
	l.mu.Unlock()
	return sums, nil
}

// vouched returns what the signed catalog lists for a package, if it
// vouches for it: it lists the package with the digest the signed
// SHA256SUMS gives and the h1: the provenance record gives. Otherwise why
// says why not ("" without a catalog is never returned: why is set).
func (l *Locker) vouched(pkg Package, a layout.ProvenanceArchive, digest [sha256.Size]byte) (layout.CatalogArchive, string) {
	if l.Catalog == nil {
		return layout.CatalogArchive{}, "no signed catalog"
	}
	listed, ok := l.Catalog[layout.ArchivePath(pkg.Provider, pkg.Version, pkg.Platform)]
	switch {
	case !ok:
		return listed, "the signed catalog does not list it"
	case listed.ZH != hashing.ZH(digest):
		return listed, fmt.Sprintf("the signed catalog lists %s, but the signed SHA256SUMS %s", listed.ZH, hashing.ZH(digest))
	case listed.H1 != a.H1:
		return listed, fmt.Sprintf("the signed catalog lists %s, but the provenance record %s", listed.H1, a.H1)
	}
	return listed, ""
}

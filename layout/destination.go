package layout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// HeldQuery asks a destination which of a version's platforms it holds.
type HeldQuery struct {
	Version   addrs.Version
	Platforms []addrs.Platform
}

// HeldPackage is a package a destination holds complete, as clients read
// it, with the bytes its provenance records: a rebuild keeps it without
// any request to the origin.
type HeldPackage struct {
	Version  addrs.Version
	Platform addrs.Platform
	ZH       hashing.Hash
	Size     int64
	// KeyID is the key the release was verified with; "" if unsigned.
	KeyID string
	// HashesOnly names the upstream whose hashes alone vouched for it.
	HashesOnly string
	// SBOM says the destination holds the package's SBOM too.
	SBOM bool
}

// HeldModule is what a destination holds of a module version.
type HeldModule struct {
	Found  bool
	SHA256 string // the package archive's digest, hex
	// Record is the version's record, nil for a destination that keeps
	// none (an OCI registry keeps the package alone).
	Record *ModuleRecord
}

// TreeDestination is a tree as a build's destination (mirror.Destination):
// a directory or a bucket, written through its store under the Repair
// policy.
type TreeDestination struct{ t *Tree }

// Destination returns the tree as a build's destination.
func (t *Tree) Destination() TreeDestination { return TreeDestination{t} }

// Tree returns the tree the destination writes.
func (d TreeDestination) Tree() *Tree { return d.t }

// Location names the tree's store in messages.
func (d TreeDestination) Location() string { return d.t.Location() }

// heldParallel bounds the versions one Held call reads at once: for a
// bucket, each is a request whose latency would otherwise add up.
// maxHeldReads bounds them across every call on one tree, which a build
// makes for many providers at once: each version read is two parsed
// documents in memory.
const (
	heldParallel = 8
	maxHeldReads = 32
)

// Held returns the packages of the queried versions that the tree holds
// complete: index.json lists the version, its <version>.json lists the
// platform with the zh: hash the provenance records, and the archive has
// the recorded size (with verify: and the recorded SHA-256, hashed from
// the archive's bytes read again, never taken from a digest the store
// records, which says what was written rather than what is there). The
// provider's index.json is read once for all the versions. A version
// whose documents cannot be read holds nothing.
func (d TreeDestination) Held(ctx context.Context, p addrs.Provider, queries []HeldQuery, verify bool) ([]HeldPackage, error) {
	idx, err := d.t.ReadIndex(ctx, p)
	if err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		out []HeldPackage
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(heldParallel)
	for _, q := range queries {
		if _, listed := idx.Versions[q.Version.String()]; !listed {
			continue
		}
		g.Go(func() error {
			if err := d.t.startRead(gctx); err != nil {
				return err
			}
			defer d.t.endRead()
			held := d.heldVersion(gctx, p, q, verify)
			mu.Lock()
			out = append(out, held...)
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return out, ctx.Err()
}

func (d TreeDestination) heldVersion(ctx context.Context, p addrs.Provider, q HeldQuery, verify bool) []HeldPackage {
	doc, err := d.t.ReadVersion(ctx, p, q.Version)
	if err != nil {
		return nil
	}
	prov, err := d.t.ReadProvenance(ctx, p, q.Version)
	if err != nil {
		return nil
	}
	var out []HeldPackage
	for _, plat := range q.Platforms {
		a, ok, err := prov.Entry(p, q.Version, plat)
		entry, listed := doc.Archives[plat.String()]
		if !ok || err != nil || !listed || a.ZH == "" || a.Size <= 0 || !slices.Contains(entry.Hashes, a.ZH) {
			continue
		}
		if d.intact(ctx, ArchivePath(p, q.Version, plat), a, verify) {
			out = append(out, HeldPackage{Version: q.Version, Platform: plat, ZH: a.ZH, Size: a.Size, KeyID: prov.KeyID, HashesOnly: prov.HashesOnly,
				SBOM: d.hasSBOM(ctx, p, q.Version, plat, a, verify)})
		}
	}
	return out
}

// intact checks an archive against its recorded size, and with verify
// against its recorded hash too, read from the archive's bytes.
func (d TreeDestination) intact(ctx context.Context, rel string, a ProvenanceArchive, verify bool) bool {
	info, err := d.t.r.Stat(ctx, rel)
	if err != nil || info.Size != a.Size {
		return false
	}
	if !verify {
		return true
	}
	sum, err := d.t.Rehash(ctx, rel)
	return err == nil && hashing.ZH(sum) == a.ZH
}

// hasSBOM says whether the tree holds the SBOM the package's provenance
// names: with verify, whether the file is there, else whether it is
// named.
func (d TreeDestination) hasSBOM(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform, a ProvenanceArchive, verify bool) bool {
	rel, ok := a.SBOMFor(p, v, plat.String())
	if !ok || !verify {
		return ok
	}
	_, err := d.t.r.Stat(ctx, rel)
	return err == nil
}

// PutArchiveAhead writes an archive before the publication that lists it
// (Tree.PutArchiveAhead).
func (d TreeDestination) PutArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a Archive) error {
	return d.t.PutArchiveAhead(ctx, p, v, a)
}

// Publish makes a release visible under the Repair policy.
func (d TreeDestination) Publish(ctx context.Context, r Release) error {
	_, err := d.t.PublishAll(ctx, Repair, []Release{r})
	return err
}

// LocalArchive returns where a package's archive is on the local
// filesystem, when the tree is a local directory.
func (d TreeDestination) LocalArchive(p addrs.Provider, v addrs.Version, plat addrs.Platform) (string, bool) {
	return d.t.LocalArchive(p, v, plat)
}

// HeldModule reports the module version's record and whether its package
// archive is in place.
func (d TreeDestination) HeldModule(ctx context.Context, m addrs.Module, v addrs.Version) (HeldModule, error) {
	rec, err := d.t.ReadModuleRecord(ctx, m, v)
	if errors.Is(err, fs.ErrNotExist) {
		return HeldModule{}, nil
	}
	if err != nil {
		return HeldModule{}, err
	}
	if _, err := d.t.r.Stat(ctx, ModuleArchivePath(m, v)); err != nil {
		return HeldModule{}, nil
	}
	return HeldModule{Found: true, SHA256: rec.SHA256, Record: &rec}, nil
}

// PublishModule publishes a module version under the Repair policy. A
// version the tree holds with another record is refused (ConflictError).
func (d TreeDestination) PublishModule(ctx context.Context, r ModuleRelease) error {
	_, err := d.t.PublishModules(ctx, Repair, []ModuleRelease{r})
	return err
}

// OpenModuleArchive streams a module version's package archive.
func (d TreeDestination) OpenModuleArchive(ctx context.Context, m addrs.Module, v addrs.Version) (io.ReadCloser, error) {
	body, err := d.t.OpenModuleArchive(ctx, m, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ModuleArchivePath(m, v), err)
	}
	return body, nil
}

// startRead waits for one of the tree's read slots (reading), which bound
// how many versions are read at once across every provider; endRead gives
// it back.
func (t *Tree) startRead(ctx context.Context) error {
	select {
	case t.reading <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Tree) endRead() { <-t.reading }

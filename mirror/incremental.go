package mirror

import (
	"context"
	"slices"
	"sync"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// kept is a package already complete in every destination, needing no
// request.
type kept struct {
	plat  addrs.Platform
	size  int64
	keyID string
	// hashesOnly names the upstream whose hashes alone vouched for it.
	hashesOnly string
	zh         hashing.Hash
}

// keptPackages finds the platforms of a release that a rebuild can keep
// without any request: in every destination, index.json lists the
// version, its <version>.json lists the platform with the zh: the
// provenance records, and the archive has the recorded size (with
// VerifyExisting: and the recorded SHA-256). Anything less is fetched as
// usual, which still downloads nothing when the bytes already there are
// right.
func (b *Builder) keptPackages(ctx context.Context, p addrs.Provider, v addrs.Version, platforms []addrs.Platform, indexes *indexCache) []kept {
	var out []kept
	if len(b.Trees) > 0 {
		out = platformsKept(ctx, b.Trees[0], p, v, platforms, b.Options.VerifyExisting, indexes)
		for _, t := range b.Trees[1:] {
			more := platformsKept(ctx, t, p, v, platforms, b.Options.VerifyExisting, indexes)
			out = slices.DeleteFunc(out, func(k kept) bool { return !slices.Contains(more, k) })
		}
	}
	return b.keptInRegistries(ctx, p, v, platforms, out, len(b.Trees) > 0)
}

func platformsKept(ctx context.Context, t *layout.Tree, p addrs.Provider, v addrs.Version, platforms []addrs.Platform, verify bool, indexes *indexCache) []kept {
	idx, err := indexes.read(ctx, t, p)
	if _, listed := idx.Versions[v.String()]; err != nil || !listed {
		return nil
	}
	doc, err := t.ReadVersion(ctx, p, v)
	if err != nil {
		return nil
	}
	prov, err := t.ReadProvenance(ctx, p, v)
	if err != nil {
		return nil
	}
	var out []kept
	for _, plat := range platforms {
		a, ok := prov.Archives[plat.String()]
		entry, listed := doc.Archives[plat.String()]
		if !ok || !listed || a.ZH == "" || a.Size <= 0 || !slices.Contains(entry.Hashes, a.ZH) {
			continue
		}
		if intact(ctx, t, layout.ArchivePath(p, v, plat), a, verify) {
			out = append(out, kept{plat: plat, size: a.Size, keyID: prov.KeyID, hashesOnly: prov.HashesOnly, zh: a.ZH})
		}
	}
	return out
}

// indexCache reads each tree's index.json of a provider once for a whole
// plan, whose releases share it.
type indexCache struct {
	mu   sync.Mutex
	docs map[indexKey]*indexDoc
}

type indexKey struct {
	tree     *layout.Tree
	provider string
}

type indexDoc struct {
	once sync.Once
	idx  layout.Index
	err  error
}

func (c *indexCache) read(ctx context.Context, t *layout.Tree, p addrs.Provider) (layout.Index, error) {
	c.mu.Lock()
	if c.docs == nil {
		c.docs = map[indexKey]*indexDoc{}
	}
	k := indexKey{t, p.String()}
	d, ok := c.docs[k]
	if !ok {
		d = &indexDoc{}
		c.docs[k] = d
	}
	c.mu.Unlock()
	d.once.Do(func() { d.idx, d.err = t.ReadIndex(ctx, p) })
	return d.idx, d.err
}

// intact checks an archive against its recorded size, and with verify
// against its recorded hash too.
func intact(ctx context.Context, t *layout.Tree, rel string, a layout.ProvenanceArchive, verify bool) bool {
	info, err := t.Reader().Stat(ctx, rel)
	if err != nil || info.Size != a.Size {
		return false
	}
	if !verify {
		return true
	}
	sum, err := t.Digest(ctx, rel)
	return err == nil && hashing.ZH(sum) == a.ZH
}

package mirror

import (
	"context"
	"slices"

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
	zh    hashing.Hash
}

// keptPackages finds the platforms of a release that a rebuild can keep
// without any request: in every destination, index.json lists the
// version, its <version>.json lists the platform with the zh: the
// provenance records, and the archive has the recorded size (with
// VerifyExisting: and the recorded SHA-256). Anything less is fetched as
// usual, which still downloads nothing when the bytes already there are
// right.
func (b *Builder) keptPackages(ctx context.Context, p addrs.Provider, v addrs.Version, platforms []addrs.Platform) []kept {
	var out []kept
	if len(b.Trees) > 0 {
		out = platformsKept(ctx, b.Trees[0], p, v, platforms, b.Options.VerifyExisting)
		for _, t := range b.Trees[1:] {
			more := platformsKept(ctx, t, p, v, platforms, b.Options.VerifyExisting)
			out = slices.DeleteFunc(out, func(k kept) bool { return !slices.Contains(more, k) })
		}
	}
	return b.keptInRegistries(ctx, p, v, platforms, out, len(b.Trees) > 0)
}

func platformsKept(ctx context.Context, t *layout.Tree, p addrs.Provider, v addrs.Version, platforms []addrs.Platform, verify bool) []kept {
	idx, err := t.ReadIndex(ctx, p)
	if _, listed := idx.Versions[v.String()]; err != nil || !listed {
		return nil
	}
	doc, err := t.ReadVersion(ctx, p, v)
	if err != nil {
		return nil
	}
	rec, err := t.ReadRecord(ctx, p, v)
	if err != nil {
		return nil
	}
	var out []kept
	for _, plat := range platforms {
		a, ok := rec.Provenance.Archives[plat.String()]
		entry, listed := doc.Archives[plat.String()]
		if !ok || !listed || a.ZH == "" || a.Size <= 0 || !slices.Contains(entry.Hashes, a.ZH) {
			continue
		}
		if intact(ctx, t, layout.ArchivePath(p, v, plat), a, verify) {
			out = append(out, kept{plat: plat, size: a.Size, keyID: rec.Provenance.KeyID, zh: a.ZH})
		}
	}
	return out
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

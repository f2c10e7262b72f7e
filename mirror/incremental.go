package mirror

import (
	"os"
	"slices"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// kept is a package already complete in the tree, needing no request.
type kept struct {
	plat  addrs.Platform
	size  int64
	keyID string
}

// keptPackages finds the platforms of a release that a rebuild can keep
// without any request: the tree's index.json lists the version, its
// <version>.json lists the platform with the zh: the provenance records,
// and the archive on disk has the recorded size (with VerifyExisting: and
// the recorded SHA-256). Anything less is fetched as usual, which still
// downloads nothing when the bytes on disk are right.
func (b *Builder) keptPackages(p addrs.Provider, v addrs.Version, platforms []addrs.Platform) []kept {
	t := b.Known
	if t == nil {
		return nil
	}
	idx, err := t.ReadIndex(p)
	if _, listed := idx.Versions[v.String()]; err != nil || !listed {
		return nil
	}
	doc, err := t.ReadVersion(p, v)
	if err != nil {
		return nil
	}
	rec, err := t.ReadRecord(p, v)
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
		if b.intact(t.Path(layout.ArchivePath(p, v, plat)), a) {
			out = append(out, kept{plat: plat, size: a.Size, keyID: rec.Provenance.KeyID})
		}
	}
	return out
}

// intact checks an archive against its recorded size, and with
// VerifyExisting against its recorded hash too.
func (b *Builder) intact(path string, a layout.ProvenanceArchive) bool {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() != a.Size {
		return false
	}
	if !b.Options.VerifyExisting {
		return true
	}
	sum, _, err := hashing.HashFile(path)
	return err == nil && hashing.ZH(sum) == a.ZH
}

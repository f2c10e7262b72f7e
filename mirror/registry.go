package mirror

import (
	"context"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Registry is a destination that is not a file tree, such as an OCI
// registry: it publishes whole releases and says which packages it holds.
// A build publishes into registries from the same download as into its
// trees.
type Registry interface {
	// Location names the registry in messages; it never holds a secret.
	Location() string
	// Held returns the packages the registry holds of a version, by
	// platform, with the provenance it keeps for them; none when it
	// holds no such version or no provenance for it.
	Held(ctx context.Context, p addrs.Provider, v addrs.Version) (map[addrs.Platform]HeldPackage, error)
	// Publish makes a release visible, merged with what the registry
	// holds of the version under the Repair policy: a package it holds
	// with other bytes is a conflict, never replaced.
	Publish(ctx context.Context, rel layout.Release) error
}

// AheadTaker is a destination that takes a release's archive before the
// publication that lists it, unseen by clients until then: a file no
// document lists yet (layout.Tree), a blob no manifest names (an OCI
// registry). A build hands each archive to them as soon as it is
// checked, so that uploads overlap the release's other downloads. A
// Registry may implement it.
type AheadTaker interface {
	PutArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a layout.Archive) error
}

// HeldPackage is a package a Registry holds.
type HeldPackage struct {
	ZH    hashing.Hash
	Size  int64
	KeyID string // of the signature the release was verified with; "" if unsigned
}

// keptInRegistries keeps the packages every registry holds with the
// bytes the trees recorded (out), or, with no tree, those the first
// registry holds and every other holds alike. Once nothing is left to
// keep, no other registry is asked.
func (b *Builder) keptInRegistries(ctx context.Context, p addrs.Provider, v addrs.Version, platforms []addrs.Platform, out []kept, haveTrees bool) []kept {
	for i, r := range b.Registries {
		if len(out) == 0 && (i > 0 || haveTrees) {
			return nil
		}
		held, err := r.Held(ctx, p, v)
		if err != nil {
			return nil
		}
		if i == 0 && !haveTrees {
			out = nil
			for _, plat := range platforms {
				if h, ok := held[plat]; ok && h.ZH != "" && h.Size > 0 {
					out = append(out, kept{plat: plat, size: h.Size, keyID: h.KeyID, zh: h.ZH})
				}
			}
			continue
		}
		var both []kept
		for _, k := range out {
			if h, ok := held[k.plat]; ok && h.ZH == k.zh && h.Size == k.size {
				both = append(both, k)
			}
		}
		out = both
	}
	return out
}

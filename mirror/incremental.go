package mirror

import (
	"context"
	"slices"

	"golang.org/x/sync/errgroup"

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

// heldKey names one package of a provider.
type heldKey struct {
	version addrs.Version
	plat    addrs.Platform
}

// markKept moves the platforms of each release that every destination
// already holds complete (Destination.Held) out of the release's
// platforms to fetch. Each destination is asked once per provider, for
// all the provider's releases of the plan. Anything less is fetched as
// usual, which still downloads nothing when the bytes already there are
// right.
func (b *Builder) markKept(ctx context.Context, releases []release) {
	if len(b.Dests) == 0 {
		return
	}
	byProvider := map[string][]int{}
	var order []string
	for i, r := range releases {
		key := r.req.Provider.String()
		if _, seen := byProvider[key]; !seen {
			order = append(order, key)
		}
		byProvider[key] = append(byProvider[key], i)
	}
	var g errgroup.Group
	g.SetLimit(b.metaParallel())
	for _, key := range order {
		g.Go(func() error {
			b.keepHeld(ctx, releases, byProvider[key])
			return nil
		})
	}
	_ = g.Wait()
}

// keepHeld marks the kept packages of one provider's releases (at idxs).
func (b *Builder) keepHeld(ctx context.Context, releases []release, idxs []int) {
	queries := make([]layout.HeldQuery, len(idxs))
	for j, i := range idxs {
		queries[j] = layout.HeldQuery{Version: releases[i].version, Platforms: releases[i].req.Platforms}
	}
	held := heldEverywhere(ctx, b.Dests, releases[idxs[0]].req.Provider, queries, b.Options.VerifyExisting)
	for _, i := range idxs {
		r := &releases[i]
		var fetch []addrs.Platform
		for _, plat := range r.req.Platforms {
			h, ok := held[heldKey{r.version, plat}]
			if !ok || b.wantsSBOM(h) {
				fetch = append(fetch, plat)
				continue
			}
			r.kept = append(r.kept, kept{plat: plat, size: h.Size, keyID: h.KeyID, hashesOnly: h.HashesOnly, zh: h.ZH})
		}
		r.req.Platforms = fetch
	}
}

// wantsSBOM says whether a held package is read again for the SBOM the
// destinations lack: only when the build reads what it holds anyway
// (VerifyExisting), so that a rebuild stays without requests.
func (b *Builder) wantsSBOM(h layout.HeldPackage) bool {
	return b.Options.VerifyExisting && b.Options.Describe != nil && !h.SBOM
}

// heldEverywhere returns the packages every destination holds with the
// same bytes (zh: hash and size), as the first one describes them. Each
// destination after the first is asked only about what is still left,
// and none once nothing is.
func heldEverywhere(ctx context.Context, dests []Destination, p addrs.Provider, queries []layout.HeldQuery, verify bool) map[heldKey]layout.HeldPackage {
	var out map[heldKey]layout.HeldPackage
	for i, d := range dests {
		pkgs, err := d.Held(ctx, p, queries, verify)
		if err != nil {
			return nil
		}
		got := make(map[heldKey]layout.HeldPackage, len(pkgs))
		for _, h := range pkgs {
			if h.ZH != "" && h.Size > 0 {
				got[heldKey{h.Version, h.Platform}] = h
			}
		}
		if i == 0 {
			out = got
		} else {
			for k, h := range out {
				g, ok := got[k]
				if !ok || g.ZH != h.ZH || g.Size != h.Size {
					delete(out, k)
					continue
				}
				h.SBOM = h.SBOM && g.SBOM
				out[k] = h
			}
		}
		if len(out) == 0 {
			return nil
		}
		queries = stillHeld(queries, out)
	}
	return out
}

// stillHeld narrows queries to the packages held so far.
func stillHeld(queries []layout.HeldQuery, held map[heldKey]layout.HeldPackage) []layout.HeldQuery {
	var out []layout.HeldQuery
	for _, q := range queries {
		plats := slices.DeleteFunc(slices.Clone(q.Platforms), func(plat addrs.Platform) bool {
			_, ok := held[heldKey{q.Version, plat}]
			return !ok
		})
		if len(plats) > 0 {
			out = append(out, layout.HeldQuery{Version: q.Version, Platforms: plats})
		}
	}
	return out
}

package build

import (
	"context"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/mirror"
)

// readUpstreamCatalogs reads the catalog.json of every upstream mirror
// the build reads. With keys, it makes each offer only what its catalog
// lists, with the digests it lists, once the signature of
// one of keys (--catalog-key, settings catalog_key) is checked: a build
// from an upstream whose catalog is unsigned, signed by another key or
// not sealed stops before it plans (exit 3). Its lines say who signed
// each upstream's catalog, or that the build reads no upstream mirror.
// Without keys, each upstream's catalog is read as it is, for its
// deprecations only (deprecations).
//
// Either way, an upstream whose catalog was read carries the warnings
// it keeps of its providers (MirrorSource.Deprecations).
func readUpstreamCatalogs(ctx context.Context, src mirror.Source, keys *signing.TrustedKeys) ([]string, error) {
	upstreams := mirrorSources(src)
	if keys == nil {
		for _, u := range upstreams {
			u.Deprecations = deprecations(ctx, u.Mirror)
		}
		return nil, nil
	}
	if len(upstreams) == 0 {
		return []string{"warning: the catalog key checks the signed catalog.json of upstream mirrors, and this build reads none (only origin registries)"}, nil
	}
	lines := make([]string, 0, len(upstreams))
	for _, u := range upstreams {
		c, signer, err := app.ReadSignedCatalog(ctx, u.Mirror, keys)
		if err != nil {
			return nil, fmt.Errorf("check the catalog of upstream %s: %w", u.Mirror.Location(), err)
		}
		u.Catalog = &mirror.SignedCatalog{Signer: mirror.Signer{KeyID: signer.KeyID, Fingerprint: signer.Fingerprint}, Archives: c.Archives}
		u.Deprecations = kept(c.Deprecations)
		lines = append(lines, fmt.Sprintf("upstream %s: catalog.json signed by key %s (fingerprint %s); only the %d archives it lists are taken from it", u.Mirror.Location(), signer.KeyID, signer.Fingerprint, len(c.Archives)))
	}
	return lines, nil
}

// deprecations are the warnings an upstream mirror keeps of its
// providers, from its catalog.json; nil when it has no catalog a build
// can read (a mirror another tool made, an OCI registry, or a catalog
// that does not parse: the warnings are news, never a reason to stop).
func deprecations(ctx context.Context, m mirror.Packages) map[string][]string {
	c, err := app.ReadCatalog(ctx, m)
	if err != nil {
		return nil
	}
	return kept(c.Deprecations)
}

// kept is a catalog's deprecations as a MirrorSource carries them: an
// empty map, not nil, when it lists none.
func kept(d map[string][]string) map[string][]string {
	if d == nil {
		return map[string][]string{}
	}
	return d
}

// mirrorSources are the upstream mirrors a source reads: itself (--from),
// or the mirrors among its routes (provider_installation).
func mirrorSources(src mirror.Source) []*mirror.MirrorSource {
	switch s := src.(type) {
	case *mirror.MirrorSource:
		return []*mirror.MirrorSource{s}
	case *mirror.RoutedSource:
		var out []*mirror.MirrorSource
		for _, r := range s.Routes {
			if m, ok := r.Source.(*mirror.MirrorSource); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

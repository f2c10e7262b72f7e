package bundle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// content is what a mirror tree is made of: the files clients and
// "tfmirror verify" read (layout.Tree.Files), and its providers.
type content struct {
	Files     []string // slash-separated paths relative to the root, sorted
	Providers []addrs.Provider
	Modules   []addrs.Module
}

func readContent(ctx context.Context, tree *layout.Tree) (content, error) {
	files, providers, err := tree.Files(ctx)
	if err != nil {
		return content{}, err
	}
	modules, err := tree.Modules(ctx)
	if err != nil {
		return content{}, err
	}
	c := content{Providers: providers, Modules: modules}
	for _, f := range files {
		c.Files = append(c.Files, f.Path)
	}
	return c, nil
}

// releases turns a verified staged mirror into what to publish: every
// version of every provider, its archives as the staged files and its kept
// origin files. An archive a version document lists under any URL but the
// one tfmirror writes is refused.
func releases(ctx context.Context, staged *layout.Tree) ([]layout.Release, error) {
	providers, err := staged.Providers(ctx)
	if err != nil {
		return nil, err
	}
	var out []layout.Release
	for _, p := range providers {
		versions, err := staged.Versions(ctx, p)
		if errors.Is(err, layout.ErrNotInMirror) {
			continue // an index with no version left (pruned): nothing to publish
		}
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			r, err := release(ctx, staged, p, v)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func release(ctx context.Context, staged *layout.Tree, p addrs.Provider, v addrs.Version) (layout.Release, error) {
	doc, err := staged.ReadVersion(ctx, p, v)
	if err != nil {
		return layout.Release{}, err
	}
	rec, err := staged.ReadRecord(ctx, p, v)
	if err != nil {
		return layout.Release{}, err
	}
	r := layout.Release{Provider: p, Version: v, Record: &rec}
	for _, name := range slices.Sorted(maps.Keys(doc.Archives)) {
		plat, err := addrs.ParsePlatform(name)
		if err != nil {
			return layout.Release{}, fmt.Errorf("%s: %w", layout.VersionPath(p, v), err)
		}
		entry := doc.Archives[name]
		if entry.URL != layout.ArchiveName(p, v, plat) {
			return layout.Release{}, refused(layout.VersionPath(p, v), "%s: the archive url %q is not this release's own archive %q", name, entry.URL, layout.ArchiveName(p, v, plat))
		}
		local, _ := staged.LocalPath(layout.ArchivePath(p, v, plat))
		a := layout.Archive{Platform: plat, Staged: local, Hashes: entry.Hashes, Move: true}
		if a.SBOM, err = sbomOf(ctx, staged, p, v, plat, rec.Provenance); err != nil {
			return layout.Release{}, err
		}
		r.Archives = append(r.Archives, a)
	}
	return r, nil
}

// sbomOf reads the SBOM the release's provenance names for a platform,
// nil when it names none.
func sbomOf(ctx context.Context, staged *layout.Tree, p addrs.Provider, v addrs.Version, plat addrs.Platform, prov layout.Provenance) ([]byte, error) {
	if prov.Archives[plat.String()].SBOM == "" {
		return nil, nil
	}
	return staged.ReadSBOM(ctx, p, v, plat)
}

// moduleReleases turns a verified staged mirror's modules into what to
// publish: every version's staged package and its record.
func moduleReleases(ctx context.Context, staged *layout.Tree) ([]layout.ModuleRelease, error) {
	modules, err := staged.Modules(ctx)
	if err != nil {
		return nil, err
	}
	var out []layout.ModuleRelease
	for _, m := range modules {
		versions, err := staged.ModuleVersions(ctx, m)
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			rec, err := staged.ReadModuleRecord(ctx, m, v)
			if err != nil {
				return nil, err
			}
			local, _ := staged.LocalPath(layout.ModuleArchivePath(m, v))
			out = append(out, layout.ModuleRelease{Module: m, Version: v, Staged: local, Move: true, Record: rec})
		}
	}
	return out, nil
}

package prune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// planner plans prunes of one tree.
type planner struct {
	tree  *layout.Tree
	reqs  map[string][]mirror.Requirement // by provider
	grace time.Duration
}

// plan reads the tree (never writing) and works out what to prune.
func (pl *planner) plan(ctx context.Context, now time.Time) (*plan, error) {
	p := &plan{location: pl.tree.Location()}
	files, err := pl.tree.List(ctx, "")
	if err != nil {
		return nil, err
	}
	providers, err := pl.tree.ProvidersIn(ctx, files) // one listing of the store, not two
	if err != nil {
		return nil, err
	}
	// The files below each host/namespace/type directory.
	byDir := map[string][]string{}
	for _, f := range files {
		if strings.HasPrefix(f, replica.Dir+"/") {
			continue // the replica is views': refreshed after the prune
		}
		if parts := strings.SplitN(f, "/", 4); len(parts) == 4 {
			dir := parts[0] + "/" + parts[1] + "/" + parts[2]
			byDir[dir] = append(byDir[dir], f)
		}
	}
	listed := map[string]addrs.VersionList{}
	for _, prov := range providers {
		pp, err := pl.provider(ctx, prov, byDir[layout.ProviderDir(prov)], now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", prov, err)
		}
		p.providers = append(p.providers, pp)
		listed[prov.String()] = pp.listed
	}
	if err := p.planCatalog(ctx, pl.tree); err != nil {
		return nil, err
	}
	p.warnings = pl.unmatched(listed)
	if err := pl.misspelt(p, listed); err != nil {
		return nil, err
	}
	if err := pl.emptiedNamed(p, listed); err != nil {
		return nil, err
	}
	return p, nil
}

// emptiedNamed refuses a prune that would unlist every version of a
// provider the manifest names, because its selection matches none of
// them: the versions it asks for are not built yet (a build cannot plan
// them either), or the constraint is wrong; either way the prune would
// take the provider away from every client.
func (pl *planner) emptiedNamed(p *plan, listed map[string]addrs.VersionList) error {
	for _, pp := range p.providers {
		name := pp.provider.String()
		reqs, named := pl.reqs[name]
		if !named || pp.remaining > 0 || len(pp.unlist) == 0 {
			continue
		}
		var asked []string
		for _, r := range reqs {
			asked = append(asked, cmp.Or(r.Constraints, "any version"))
		}
		return inputerr.Wrap(fmt.Errorf("the manifest selects %s (%s), which matches none of the %d versions the mirror lists (%s), and this prune would unlist them all: build first, or fix the manifest",
			name, strings.Join(asked, "; "), len(listed[name]), strings.Join(versionStrings(listed[name]), ", ")))
	}
	return nil
}

func versionStrings(vs addrs.VersionList) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out
}

// misspelt refuses a prune that would unlist every version of a provider
// whose address is an edit or two away from one the manifest names and
// the mirror does not hold: the manifest most likely misspells it, and
// the prune would take the provider away from every client.
func (pl *planner) misspelt(p *plan, listed map[string]addrs.VersionList) error {
	var emptied []string
	for _, pp := range p.providers {
		if pp.remaining == 0 && len(pp.unlist) > 0 {
			emptied = append(emptied, pp.provider.String())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pl.reqs)) {
		if _, held := listed[name]; held {
			continue
		}
		if meant := addrs.Nearest(name, emptied); meant != "" {
			return inputerr.Wrap(fmt.Errorf("the manifest selects %s, which the mirror does not hold, and this prune would unlist every version of %s: did you mean %s? Fix the manifest, or build %s before pruning", name, meant, meant, name))
		}
	}
	return nil
}

// unmatched warns of requirements that select nothing the mirror lists:
// a prune keeps nothing for them, which is right only if the manifest is.
func (pl *planner) unmatched(listed map[string]addrs.VersionList) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(pl.reqs)) {
		versions, held := listed[name]
		for _, r := range pl.reqs[name] {
			constraints := r.Constraints
			if constraints == "" {
				constraints = "any version"
			}
			switch {
			case !held:
				out = append(out, fmt.Sprintf("%s (%s): the mirror does not hold this provider; build it first", name, constraints))
			case len(r.Select(versions)) == 0:
				out = append(out, fmt.Sprintf("%s (%s): the mirror lists no matching version; build first", name, constraints))
			}
		}
	}
	return out
}

// planCatalog drops from catalog.json the providers left with no version
// listed.
func (p *plan) planCatalog(ctx context.Context, tree *layout.Tree) error {
	empty := map[string]bool{}
	for _, pp := range p.providers {
		if pp.remaining == 0 {
			empty[pp.provider.String()] = true
		}
	}
	if len(empty) == 0 {
		return nil
	}
	c, found, err := tree.ReadCatalog(ctx)
	if err != nil || !found {
		return err
	}
	kept := []string{}
	for _, raw := range c.Providers {
		if q, err := addrs.ParseProvider(raw); err == nil && empty[q.String()] {
			p.dropped = append(p.dropped, q)
			continue
		}
		kept = append(kept, raw)
	}
	if len(p.dropped) == 0 {
		return nil
	}
	p.catalog, err = layout.Encode(layout.Catalog{Providers: kept})
	return err
}

// selected returns the versions of available that the requirements of
// prov select, by the build's rule.
func (pl *planner) selected(prov addrs.Provider, available addrs.VersionList) map[string]bool {
	out := map[string]bool{}
	for _, r := range pl.reqs[prov.String()] {
		for _, v := range r.Select(available) {
			out[v.String()] = true
		}
	}
	return out
}

// provider plans one provider: files is every file below its directory.
func (pl *planner) provider(ctx context.Context, prov addrs.Provider, files []string, now time.Time) (*providerPlan, error) {
	pp := &providerPlan{provider: prov}
	indexRel := layout.IndexPath(prov)
	idx, err := pl.tree.ReadIndex(ctx, prov)
	if err != nil {
		return nil, err
	}
	indexExists := slices.Contains(files, indexRel)
	listedAs := map[string]string{} // a listed version's canonical form -> its key in index.json
	for _, raw := range slices.Sorted(maps.Keys(idx.Versions)) {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			return nil, fmt.Errorf("%s lists %q, which is not a version: fix or rebuild it before pruning: %w", indexRel, raw, err)
		}
		if _, dup := listedAs[v.String()]; !dup {
			pp.listed = append(pp.listed, v)
		}
		listedAs[v.String()] = raw
	}
	pp.listed.Sort()

	keep := pl.selected(prov, pp.listed)
	for _, v := range pp.listed {
		if !keep[v.String()] {
			pp.unlist = append(pp.unlist, v)
		}
	}
	pp.remaining = len(pp.listed) - len(pp.unlist)
	if len(pp.unlist) > 0 {
		next := layout.Index{Versions: map[string]struct{}{}}
		for raw := range idx.Versions {
			if v, err := addrs.ParseVersion(raw); err == nil && keep[v.String()] {
				next.Versions[raw] = struct{}{}
			}
		}
		if pp.index, err = layout.Encode(next); err != nil {
			return nil, err
		}
	}

	held, leftAlone := classify(prov, files)
	pp.leftAlone = leftAlone
	all := slices.Clone(pp.listed)
	for _, h := range held {
		if _, ok := listedAs[h.version.String()]; !ok {
			all = append(all, h.version)
		}
	}
	wanted := pl.selected(prov, all)
	since := &unlistedSince{tree: pl.tree, index: indexRel, exists: indexExists}
	for _, h := range held {
		key := h.version.String()
		_, wasListed := listedAs[key]
		switch {
		case keep[key]:
			// Stays listed.
		case wasListed && pl.grace == 0:
			pp.del = append(pp.del, h)
		case wasListed:
			pp.waiting = append(pp.waiting, Waiting{Version{prov, h.version}, now.Add(pl.grace)})
		case wanted[key]:
			pp.kept = append(pp.kept, h.version)
		case pl.grace == 0:
			pp.del = append(pp.del, h)
		default:
			t, err := since.of(ctx, h)
			if err != nil {
				return nil, err
			}
			switch {
			case t.IsZero():
				pp.waiting = append(pp.waiting, Waiting{Version: Version{prov, h.version}})
			case !now.Before(t.Add(pl.grace)):
				pp.del = append(pp.del, h)
			default:
				pp.waiting = append(pp.waiting, Waiting{Version{prov, h.version}, t.Add(pl.grace)})
			}
		}
	}
	pp.deleteIndex = indexExists && pp.remaining == 0 && len(pp.waiting) == 0 && len(pp.kept) == 0
	return pp, nil
}

// unlistedSince says since when a version no index.json lists has not
// been listed, as far as the store can tell: since index.json last
// changed, or, for a provider without one, since its files were written.
type unlistedSince struct {
	tree   *layout.Tree
	index  string
	exists bool
	read   bool
	t      time.Time
}

func (u *unlistedSince) of(ctx context.Context, h heldVersion) (time.Time, error) {
	if u.exists {
		if !u.read {
			info, err := u.tree.Reader().Stat(ctx, u.index)
			if err != nil {
				return time.Time{}, fmt.Errorf("stat %s: %w", u.index, err)
			}
			u.t, u.read = info.ModTime, true
		}
		return u.t, nil
	}
	var newest time.Time
	for _, rel := range h.files() {
		info, err := u.tree.Reader().Stat(ctx, rel)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("stat %s: %w", rel, err)
		}
		if info.ModTime.IsZero() {
			return time.Time{}, nil
		}
		if info.ModTime.After(newest) {
			newest = info.ModTime
		}
	}
	return newest, nil
}

// heldVersion is the files a tree holds of one version of a provider,
// each at the path layout names for it.
type heldVersion struct {
	version    addrs.Version
	doc        string
	provenance string
	sums       string
	signature  string
	archives   []string // and the packages' SBOMs
}

// files lists the version's files in the order a prune deletes them, the
// reverse of the publish order: <version>.json, the provenance record,
// SHA256SUMS and its signature, then the archives and their SBOMs.
func (h heldVersion) files() []string {
	var out []string
	for _, rel := range []string{h.doc, h.provenance, h.sums, h.signature} {
		if rel != "" {
			out = append(out, rel)
		}
	}
	return append(out, h.archives...)
}

// classify sorts the files of a provider's directory into the versions
// they belong to, sorted by version; any other file but index.json and
// the kept warnings is left alone.
func classify(prov addrs.Provider, files []string) ([]heldVersion, []LeftAlone) {
	byVersion := map[string]*heldVersion{}
	var left []LeftAlone
	for _, rel := range files {
		if rel == layout.IndexPath(prov) || rel == layout.WarningsPath(prov) {
			continue
		}
		v, slot, ok := versionFile(prov, rel)
		if !ok {
			left = append(left, LeftAlone{Path: rel, Reason: fmt.Sprintf("not a file tfmirror writes for a version of %s", prov)})
			continue
		}
		h := byVersion[v.String()]
		if h == nil {
			h = &heldVersion{version: v}
			byVersion[v.String()] = h
		}
		switch slot {
		case slotDoc:
			h.doc = rel
		case slotProvenance:
			h.provenance = rel
		case slotSums:
			h.sums = rel
		case slotSignature:
			h.signature = rel
		case slotArchive, slotSBOM:
			h.archives = append(h.archives, rel)
		}
	}
	out := make([]heldVersion, 0, len(byVersion))
	for _, h := range byVersion {
		slices.Sort(h.archives)
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b heldVersion) int {
		switch {
		case a.version.LessThan(b.version):
			return -1
		case b.version.LessThan(a.version):
			return 1
		}
		return strings.Compare(a.version.String(), b.version.String())
	})
	return out, left
}

// fileSlot is which of a version's files a path is.
type fileSlot int

const (
	slotDoc fileSlot = iota
	slotProvenance
	slotSums
	slotSignature
	slotArchive
	slotSBOM
)

// versionFile says which file of which version of prov rel is: rel must
// be exactly the path a layout path helper gives for it, so a prune never
// deletes a file tfmirror did not name.
func versionFile(prov addrs.Provider, rel string) (addrs.Version, fileSlot, bool) {
	dir, base := path.Split(rel)
	if dir != layout.ProviderDir(prov)+"/" {
		return addrs.Version{}, 0, false
	}
	if rest, ok := strings.CutPrefix(base, "terraform-provider-"+prov.Type+"_"); ok {
		raw, suffix, _ := strings.Cut(rest, "_")
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			return addrs.Version{}, 0, false
		}
		switch rel {
		case layout.ProvenancePath(prov, v):
			return v, slotProvenance, true
		case layout.SumsPath(prov, v):
			return v, slotSums, true
		case layout.SignaturePath(prov, v):
			return v, slotSignature, true
		}
		if name, ok := strings.CutSuffix(suffix, ".zip"); ok {
			if plat, err := addrs.ParsePlatform(name); err == nil && layout.ArchivePath(prov, v, plat) == rel {
				return v, slotArchive, true
			}
		}
		if name, ok := strings.CutSuffix(suffix, layout.SBOMSuffix); ok {
			if plat, err := addrs.ParsePlatform(name); err == nil && layout.SBOMPath(prov, v, plat) == rel {
				return v, slotSBOM, true
			}
		}
		return addrs.Version{}, 0, false
	}
	if raw, ok := strings.CutSuffix(base, ".json"); ok {
		if v, err := addrs.ParseVersion(raw); err == nil && layout.VersionPath(prov, v) == rel {
			return v, slotDoc, true
		}
	}
	return addrs.Version{}, 0, false
}

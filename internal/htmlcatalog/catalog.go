package htmlcatalog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	units "github.com/tfmirror/tfmirror/internal/size"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/layout"
)

// Path is where the page is written, relative to the tree's root.
const Path = "index.html"

// DefaultDetailed is how many of each provider's and module's newest
// versions the page shows in full when Options.Detailed is 0.
const DefaultDetailed = 10

// Placeholder stands for the mirror's URL in the client configuration the
// page shows when Options.MirrorURL is empty. Served over HTTP(S), the
// page's script replaces it with the page's own location.
const Placeholder = "https://MIRROR/"

// parallelism bounds the reads in flight (requests, for a bucket).
const parallelism = 8

// Options say how the page is written.
type Options struct {
	// MirrorURL is the URL the tree is published at (an http or https URL;
	// a trailing slash is added), for the client configuration the page
	// shows. Empty: Placeholder.
	MirrorURL string
	// Detailed is how many of each provider's and module's newest versions
	// are shown in full (platforms, sizes, hashes); older ones are listed
	// compactly in a collapsed details element. 0 means DefaultDetailed; a
	// negative number shows every version in full.
	Detailed int
	// EmbedTimes writes when each version was mirrored (the ModTime of its
	// <version>.json or module record) into the page. The page then depends
	// on when the tree's documents were written, not only on what they
	// hold (see the package documentation). Without it the page shows the
	// time the serving host reports, read by its script.
	EmbedTimes bool
}

// Write renders the catalog of tree and writes it to index.html at the
// tree's root, atomically through the tree's store, unless the file already
// holds exactly those bytes.
func Write(ctx context.Context, tree *layout.Tree, opts Options) error {
	data, err := Render(ctx, tree, opts)
	if err != nil {
		return err
	}
	if unchanged(ctx, tree, data) {
		return nil
	}
	if err := tree.Put(ctx, Path, data); err != nil {
		return fmt.Errorf("html catalog: %w", err)
	}
	return nil
}

// unchanged reports whether the tree's page holds data already, from its
// size and its bytes hashed as they stream: the page of a large mirror is
// tens of megabytes, which need not be in memory twice.
func unchanged(ctx context.Context, tree *layout.Tree, data []byte) bool {
	info, err := tree.Reader().Stat(ctx, Path)
	if err != nil || info.Size != int64(len(data)) {
		return false
	}
	sum, err := tree.Rehash(ctx, Path)
	return err == nil && sum == sha256.Sum256(data)
}

// Render returns the page Write would write, without writing it.
func Render(ctx context.Context, tree *layout.Tree, opts Options) ([]byte, error) {
	mirrorURL, err := normalizeURL(opts.MirrorURL)
	if err != nil {
		return nil, err
	}
	if opts.Detailed == 0 {
		opts.Detailed = DefaultDetailed
	}
	r := &reader{tree: tree, opts: opts}
	pg, err := r.read(ctx)
	if err != nil {
		return nil, fmt.Errorf("html catalog of %s: %w", tree.Location(), err)
	}
	pg.MirrorURL = mirrorURL
	if opts.MirrorURL == "" {
		pg.Placeholder = Placeholder
	}
	pg.ProviderBlock = providerBlock(mirrorURL)
	for _, h := range slices.SortedFunc(maps.Keys(pg.services), func(a, b addrs.Hostname) int { return strings.Compare(string(a), string(b)) }) {
		pg.HostBlocks = append(pg.HostBlocks, hostBlock{Host: h.ForDisplay(), Block: replica.ServicesBlock(h, mirrorURL, pg.services[h])})
	}
	return render(pg)
}

// normalizeURL checks a mirror URL and gives it a trailing slash; empty
// gives the placeholder.
func normalizeURL(s string) (string, error) {
	if s == "" {
		return Placeholder, nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("html catalog: mirror URL %q is not an http or https URL without credentials, query or fragment", s)
	}
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	return s, nil
}

// providerBlock is the CLI configuration that installs providers from the
// network mirror at mirrorURL, as the README gives it.
func providerBlock(mirrorURL string) string {
	return fmt.Sprintf(`provider_installation {
  network_mirror {
    url              = %q  # the trailing slash matters
    trust_all_hashes = true  # OpenTofu >= 1.12; leave out for Terraform
  }
}
`, mirrorURL)
}

// reader collects what the page shows.
type reader struct {
	tree  *layout.Tree
	opts  Options
	vulns layout.Vulnerabilities // what builds with a database recorded
}

func (r *reader) read(ctx context.Context) (*page, error) {
	pg := &page{services: map[addrs.Hostname]map[string]string{}, EmbedTimes: r.opts.EmbedTimes}
	providers, err := r.tree.Providers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	for _, p := range providers {
		if string(p.Hostname) == Path {
			return nil, fmt.Errorf("the mirror holds providers of a host named %q, whose directory the page would be written over", Path)
		}
	}
	modules, err := r.tree.Modules(ctx)
	if err != nil {
		return nil, fmt.Errorf("list modules: %w", err)
	}
	if r.vulns, err = r.tree.ReadVulnerabilities(ctx); err != nil {
		return nil, err
	}
	described, _, err := r.tree.ReadCatalog(ctx)
	if err != nil {
		return nil, err
	}

	// First every index, then every version, each with parallelism reads
	// in flight.
	pg.Providers = make([]*providerView, len(providers))
	pg.Modules = make([]*moduleView, len(modules))
	problems := make([][]string, len(providers))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for i, p := range providers {
		g.Go(func() (err error) { pg.Providers[i], problems[i], err = r.provider(gctx, p); return err })
	}
	for i, m := range modules {
		g.Go(func() (err error) { pg.Modules[i], err = r.module(gctx, m); return err })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	pg.Problems = slices.Concat(problems...)
	for i, p := range providers {
		pg.Providers[i].Deprecations = escapedAll(described.Deprecations[p.String()])
		pg.Providers[i].Signers = described.Signers[p.String()]
	}

	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(parallelism)
	for i, p := range providers {
		pv := pg.Providers[i]
		for j, vv := range pv.all {
			g.Go(func() error { return r.version(gctx, p, vv, j < r.detailed()) })
		}
		g.Go(func() error {
			return r.offers(gctx, replica.VersionsPath(p), regproto.ProvidersV1, "/"+replica.ServicesPath(p.Hostname), &pv.replica)
		})
	}
	for i, m := range modules {
		mv := pg.Modules[i]
		for j, vv := range mv.all {
			g.Go(func() error { return r.moduleVersion(gctx, m, vv, j < r.detailed()) })
		}
		g.Go(func() error {
			return r.offers(gctx, replica.ModuleVersionsPath(m), regproto.ModulesV1, "/"+replica.ModuleServicesPath(m.Host), &mv.replica)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, pv := range pg.Providers {
		pg.addOffer(pv.host, pv.replica)
		pg.Versions += len(pv.all)
		for _, v := range pv.all {
			pg.Packages += v.packages
		}
	}
	for _, mv := range pg.Modules {
		pg.addOffer(mv.host, mv.replica)
		pg.ModuleVersions += len(mv.all)
	}
	r.changes(ctx, pg)
	slices.Sort(pg.Problems)
	return pg, nil
}

func (r *reader) detailed() int {
	if r.opts.Detailed < 0 {
		return int(^uint(0) >> 1)
	}
	return r.opts.Detailed
}

// offer is a replica service a host's block names, when its document for
// one provider or module is in the tree.
type offer struct{ service, path string }

// offers records in *o that the replica serves what rel belongs to, when
// the tree holds rel.
func (r *reader) offers(ctx context.Context, rel, service, base string, o **offer) error {
	if _, err := r.tree.Reader().Stat(ctx, rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	*o = &offer{service: service, path: base}
	return nil
}

func (pg *page) addOffer(host addrs.Hostname, o *offer) {
	if o == nil {
		return
	}
	if pg.services[host] == nil {
		pg.services[host] = map[string]string{}
	}
	pg.services[host][o.service] = o.path
}

// provider lists a provider's versions, newest first; what each holds is
// read by version.
func (r *reader) provider(ctx context.Context, p addrs.Provider) (*providerView, []string, error) {
	idx, err := r.tree.ReadIndex(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	pv := &providerView{section: section[*versionView]{kind: "provider", Address: p.String(), host: p.Hostname, Index: href(layout.IndexPath(p))}}
	var list addrs.VersionList
	for raw := range idx.Versions {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s lists %q, which is not a version", layout.IndexPath(p), raw))
			continue
		}
		list = append(list, v)
	}
	list.Sort()
	for _, v := range slices.Backward(list) {
		pv.all = append(pv.all, &versionView{Version: v.String(), Doc: href(layout.VersionPath(p, v))})
	}
	pv.split(r.detailed())
	return pv, problems, nil
}

// version reads one provider version: its platforms and hashes, its key
// and, when detailed, its archives' sizes.
func (r *reader) version(ctx context.Context, p addrs.Provider, vv *versionView, detailed bool) error {
	v, err := addrs.ParseVersion(vv.Version)
	if err != nil {
		return err
	}
	doc, err := r.tree.ReadVersion(ctx, p, v)
	if err != nil {
		return err
	}
	prov, err := r.tree.ReadProvenance(ctx, p, v)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		vv.Key, vv.KeyNote = "unknown", "the mirror keeps no provenance record for this release"
	case err != nil:
		return err
	case prov.HashesOnly != "":
		vv.Key, vv.KeyNote = "hashes only", "no signature: only the hashes of "+prov.HashesOnly+" vouch for this release"
	case prov.KeyID == "":
		vv.Key, vv.KeyNote = "unsigned", "the origin published no signing keys"
	default:
		vv.Key, vv.Signed = prov.KeyID, true
	}
	if err := r.when(ctx, layout.VersionPath(p, v), &vv.When); err != nil {
		return err
	}
	if len(doc.Archives) == 0 {
		vv.Problem = "its " + path.Base(layout.VersionPath(p, v)) + " is missing or lists no platform: clients cannot install it"
	}
	for _, key := range slices.Sorted(maps.Keys(doc.Archives)) {
		a := doc.Archives[key]
		pl := &platformView{Platform: key}
		if _, err := addrs.ParsePlatform(key); err != nil {
			pl.Problem = "not a platform"
		}
		rel, inTree := layout.ArchiveRel(layout.VersionPath(p, v), a.URL)
		if inTree {
			pl.Href = href(rel)
		} else {
			pl.Problem = "its archive is not in this tree: " + a.URL
		}
		vv.packages++
		vv.Platforms = append(vv.Platforms, pl)
		if !detailed {
			continue
		}
		pl.Hashes = sortedHashes(a.Hashes)
		if pa, ok := prov.Archives[key]; ok && pa.Filename != "" {
			pl.Upstream = pa.Filename
		}
		pl.SBOM, pl.Build = sbomOf(p, v, key, prov.Archives[key])
		pl.Advisories = r.advisoriesOf(p.String() + " " + v.String() + " " + key)
		if !inTree {
			continue
		}
		info, err := r.tree.Reader().Stat(ctx, rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			pl.Problem, pl.Href = "the archive is missing from the tree", ""
		case err != nil:
			return fmt.Errorf("stat %s: %w", rel, err)
		default:
			pl.Size = size(info.Size)
		}
	}
	return nil
}

// advisoriesOf are the known vulnerabilities recorded for a package.
func (r *reader) advisoriesOf(key string) []advisoryView {
	var out []advisoryView
	for _, id := range r.vulns.Packages[key] {
		a := r.vulns.Advisories[id]
		title := strings.Join(append([]string{a.Summary}, a.Aliases...), " · ")
		out = append(out, advisoryView{ID: id, Module: a.Module, Found: a.Found, Fixed: a.Fixed, Title: title})
	}
	return out
}

// sbomOf links the SBOM a provenance entry names for platform plat, and
// says what its executable was built with; nothing when it names none.
func sbomOf(p addrs.Provider, v addrs.Version, plat string, a layout.ProvenanceArchive) (link, build string) {
	rel, ok := a.SBOMFor(p, v, plat)
	switch {
	case !ok:
		return "", ""
	case a.GoVersion == "":
		return href(rel), "no build information"
	}
	return href(rel), "built with " + a.GoVersion
}

// when reads the time rel was written into *w when the page embeds times,
// or names the document for the page's script to ask the host.
func (r *reader) when(ctx context.Context, rel string, w *when) error {
	if !r.opts.EmbedTimes {
		w.Doc = href(rel)
		return nil
	}
	info, err := r.tree.Reader().Stat(ctx, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	if err == nil && !info.ModTime.IsZero() {
		t := info.ModTime.UTC()
		w.Time, w.Shown = t.Format(time.RFC3339), t.Format("2006-01-02 15:04:05 UTC")
	}
	return nil
}

func (r *reader) module(ctx context.Context, m addrs.Module) (*moduleView, error) {
	versions, err := r.tree.ModuleVersions(ctx, m)
	if err != nil {
		return nil, err
	}
	mv := &moduleView{section: section[*moduleVersionView]{kind: "module", Address: m.String(), host: m.Host, Index: href(layout.ModuleIndexPath(m))}, Source: m.ForDisplay()}
	for _, v := range slices.Backward(versions) {
		mv.all = append(mv.all, &moduleVersionView{Version: v.String(), Doc: href(layout.ModuleRecordPath(m, v)), Href: href(layout.ModuleArchivePath(m, v))})
	}
	mv.split(r.detailed())
	return mv, nil
}

func (r *reader) moduleVersion(ctx context.Context, m addrs.Module, mv *moduleVersionView, detailed bool) error {
	v, err := addrs.ParseVersion(mv.Version)
	if err != nil {
		return err
	}
	rec, err := r.tree.ReadModuleRecord(ctx, m, v)
	if errors.Is(err, fs.ErrNotExist) {
		mv.Problem, mv.Href = "the mirror lists this version but holds no record of it", ""
		return nil
	}
	if err != nil {
		return err
	}
	if err := r.when(ctx, layout.ModuleRecordPath(m, v), &mv.When); err != nil {
		return err
	}
	mv.Size = size(rec.Size)
	if !detailed {
		return nil
	}
	mv.SHA256, mv.Subdir = rec.SHA256, rec.Subdir
	mv.Location, mv.Commit, mv.ArchiveSHA256 = rec.Upstream.Location, rec.Upstream.Commit, rec.Upstream.ArchiveSHA256
	for _, c := range rec.Calls {
		call := c.Module
		if c.Version != "" {
			call += " " + c.Version
		}
		mv.Calls = append(mv.Calls, call)
	}
	return nil
}

// href is a link from the page (at the tree's root) to rel: relative, so
// it works under any prefix, each segment escaped, and starting with "./"
// so that no segment is ever read as a scheme.
func href(rel string) string {
	parts := strings.Split(rel, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return "./" + strings.Join(parts, "/")
}

func sortedHashes(hs []hashing.Hash) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		out = append(out, string(h))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// size renders a byte count for people as the command line does, with
// the exact count.
func size(n int64) string {
	if n < 1000 {
		return units.Format(n)
	}
	return fmt.Sprintf("%s (%d bytes)", units.Format(n), n)
}

// escapedAll is the registry's warnings as the page shows them: control
// characters and invalid UTF-8 escaped (html/template escapes HTML, not a
// terminal's escape sequences, which a page read with curl would run).
func escapedAll(ws []string) []string {
	if ws == nil {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = excerpt.Text(w, len(w))
	}
	return out
}

package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// FileKind is what a file of a tree is, which decides how a publication
// merges it and when it is published.
type FileKind int

// The kinds, in publish order: clients never see a document before the
// files it names.
const (
	KindFile       FileKind = iota // archives, SHA256SUMS, signatures: immutable
	KindProvenance                 // a release's provenance: merged
	KindVersion                    // <version>.json: merged
	KindIndex                      // index.json: merged
	KindCatalog                    // catalog.json: merged, written last
)

// File is one file of a tree.
type File struct {
	Path string // slash-separated, relative to the root
	Kind FileKind
}

// ArchiveRel resolves the url of an archive in the version document at
// docPath to a path in the tree; false for a URL that leaves the tree or
// is absolute.
func ArchiveRel(docPath, url string) (string, bool) {
	if url == "" || strings.Contains(url, ":") || strings.HasPrefix(url, "/") || strings.Contains(url, `\`) {
		return "", false
	}
	rel := path.Join(path.Dir(docPath), url)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

// Files lists what the tree is made of, sorted by path: catalog.json, and
// for every provider its index.json and kept warnings (warnings.json, if
// any), then for each listed version its
// <version>.json, the archives it lists in the tree, the kept
// SHA256SUMS, signature and provenance, and the SBOMs the provenance
// names; for every module its index.json
// and each listed version's record and package; the change records the
// change index lists, with the index and the feed. Files that the documents name but
// the store lacks are left out (verify reports them).
func (t *Tree) Files(ctx context.Context) ([]File, []addrs.Provider, error) {
	providers, err := t.Providers(ctx)
	if err != nil {
		return nil, nil, err
	}
	set := fileSet{}
	if err := set.add(ctx, t.r, CatalogPath, KindCatalog); err != nil {
		return nil, nil, err
	}
	for _, p := range providers {
		if err := t.providerFiles(ctx, p, set); err != nil {
			return nil, nil, err
		}
	}
	modules, err := t.Modules(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, m := range modules {
		if err := t.moduleFiles(ctx, m, set); err != nil {
			return nil, nil, err
		}
	}
	if err := t.changeFiles(ctx, set); err != nil {
		return nil, nil, err
	}
	files := make([]File, 0, len(set))
	for p, k := range set {
		files = append(files, File{Path: p, Kind: k})
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return files, providers, nil
}

func (t *Tree) providerFiles(ctx context.Context, p addrs.Provider, set fileSet) error {
	for _, rel := range []string{IndexPath(p), WarningsPath(p)} {
		if err := set.add(ctx, t.r, rel, KindIndex); err != nil {
			return err
		}
	}
	versions, err := t.Versions(ctx, p)
	if errors.Is(err, ErrNotInMirror) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := t.releaseFiles(ctx, p, v, set); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tree) releaseFiles(ctx context.Context, p addrs.Provider, v addrs.Version, set fileSet) error {
	for rel, k := range map[string]FileKind{
		VersionPath(p, v): KindVersion, ProvenancePath(p, v): KindProvenance,
		SumsPath(p, v): KindFile, SignaturePath(p, v): KindFile,
	} {
		if err := set.add(ctx, t.r, rel, k); err != nil {
			return err
		}
	}
	doc, err := t.ReadVersion(ctx, p, v)
	if err != nil {
		return err
	}
	for _, a := range doc.Archives {
		if rel, ok := ArchiveRel(VersionPath(p, v), a.URL); ok {
			if err := set.add(ctx, t.r, rel, KindFile); err != nil {
				return err
			}
		}
	}
	return t.sbomFiles(ctx, p, v, set)
}

// sbomFiles adds the SBOMs the release's provenance names.
func (t *Tree) sbomFiles(ctx context.Context, p addrs.Provider, v addrs.Version, set fileSet) error {
	prov, err := t.ReadProvenance(ctx, p, v)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for plat, a := range prov.Archives {
		if rel, ok := a.SBOMFor(p, v, plat); ok {
			if err := set.add(ctx, t.r, rel, KindFile); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileSet collects the files of a tree with their kinds.
type fileSet map[string]FileKind

// add records rel if the store holds it; a file that is not regular is an
// error, and so is one path named as two kinds of file.
func (s fileSet) add(ctx context.Context, r Reader, rel string, k FileKind) error {
	_, err := r.Stat(ctx, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if was, ok := s[rel]; ok && was != k {
		return fmt.Errorf("%s is referred to as two different kinds of file", rel)
	}
	s[rel] = k
	return nil
}

// DecodeDocument decodes a JSON document of a tree by its path (slash-
// separated, relative to the root): catalog.json, a provider's index.json,
// warnings.json, <version>.json or provenance record, a module's
// index.json or version record.
func DecodeDocument(rel string, data []byte) (any, error) {
	module := strings.HasPrefix(rel, ModulesDir+"/")
	switch {
	case rel == CatalogPath:
		return DecodeCatalog(data)
	case rel == ChangeIndexPath:
		return DecodeChangeIndex(data)
	case strings.HasPrefix(rel, ChangesDir+"/"):
		return DecodeChangeRecord(data)
	case module && path.Base(rel) == "index.json":
		return DecodeModuleIndex(data)
	case module:
		return DecodeModuleRecord(data)
	case path.Base(rel) == "index.json":
		return DecodeIndex(data)
	case path.Base(rel) == "warnings.json":
		return DecodeWarnings(data)
	case strings.HasSuffix(rel, "_provenance.json"):
		return DecodeProvenance(data)
	}
	return DecodeVersion(data)
}

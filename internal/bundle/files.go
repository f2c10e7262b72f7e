package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// content is what a mirror tree is made of.
type content struct {
	// Files are the files clients and "tfmirror verify" read, as sorted
	// slash-separated paths relative to the root: catalog.json, and for
	// every provider its index.json, the <version>.json of each listed
	// version, the archives those list, and each release's kept
	// SHA256SUMS, signature and provenance.
	Files     []string
	Kinds     map[string]kind // of each file
	Providers []addrs.Provider
}

// kind is what a mirror file is, which decides how it is merged into an
// existing mirror and when it is published.
type kind int

// The kinds, in publish order.
const (
	kindFile       kind = iota // archives, SHA256SUMS, signatures: immutable
	kindProvenance             // a release's provenance: merged
	kindVersion                // <version>.json: merged
	kindIndex                  // index.json: merged
	kindCatalog                // catalog.json: merged, written last
)

// readContent lists what the mirror in tree is made of. Files the
// documents name but that are not in the tree are left out (verification
// reports them). Anything in the set that is not a regular file is an
// error.
func readContent(ctx context.Context, tree *layout.Tree) (content, error) {
	providers, err := mirror.TreeReader{Tree: tree}.Providers(ctx)
	if err != nil {
		return content{}, err
	}
	set := map[string]kind{}
	add := func(rel string, k kind) error {
		rel = filepath.ToSlash(rel)
		info, err := os.Lstat(tree.Path(filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case !info.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", rel, info.Mode().Type())
		}
		if was, ok := set[rel]; ok && was != k {
			return fmt.Errorf("%s is referred to as two different kinds of file", rel)
		}
		set[rel] = k
		return nil
	}
	if err := add(layout.CatalogPath, kindCatalog); err != nil {
		return content{}, err
	}
	for _, p := range providers {
		if err := providerFiles(tree, p, add); err != nil {
			return content{}, err
		}
	}
	files := make([]string, 0, len(set))
	for f := range set {
		files = append(files, f)
	}
	slices.Sort(files)
	return content{Files: files, Kinds: set, Providers: providers}, nil
}

func providerFiles(tree *layout.Tree, p addrs.Provider, add func(string, kind) error) error {
	if err := add(layout.IndexPath(p), kindIndex); err != nil {
		return err
	}
	data, err := os.ReadFile(tree.Path(layout.IndexPath(p)))
	if err != nil {
		return err
	}
	idx, err := layout.DecodeIndex(data)
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.ToSlash(layout.IndexPath(p)), err)
	}
	for key := range idx.Versions {
		v, err := addrs.ParseVersion(key)
		if err != nil {
			return fmt.Errorf("%s: version %q: %w", filepath.ToSlash(layout.IndexPath(p)), key, err)
		}
		for rel, k := range map[string]kind{
			layout.VersionPath(p, v): kindVersion, layout.ProvenancePath(p, v): kindProvenance,
			layout.SumsPath(p, v): kindFile, layout.SignaturePath(p, v): kindFile,
		} {
			if err := add(rel, k); err != nil {
				return err
			}
		}
		docPath := filepath.ToSlash(layout.VersionPath(p, v))
		data, err := os.ReadFile(tree.Path(layout.VersionPath(p, v)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		doc, err := layout.DecodeVersion(data)
		if err != nil {
			return fmt.Errorf("%s: %w", docPath, err)
		}
		for _, a := range doc.Archives {
			if rel, ok := localArchive(docPath, a.URL); ok {
				if err := add(rel, kindFile); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// localArchive resolves an archive URL of a version document to a path in
// the mirror, the way "tfmirror verify" does; false for a URL elsewhere.
func localArchive(docPath, url string) (string, bool) {
	if url == "" || strings.Contains(url, ":") || strings.HasPrefix(url, "/") {
		return "", false
	}
	rel := path.Join(path.Dir(docPath), url)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return rel, true
}

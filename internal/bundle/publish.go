package bundle

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// action is how one file of the staged mirror reaches the destination.
type action struct {
	rel  string // slash-separated, relative to the mirror's root
	kind kind
	from string // the staged file to rename into place, or ""
	data []byte // the merged content to write, when from is ""
	same bool   // the destination already holds exactly this content
}

// publish merges the verified staged mirror into tree. Every action is
// planned (and every existing document read and merged) before anything
// is written, so a conflict refuses the bundle with the destination
// untouched. Then files are published in publish order: archives and kept
// origin files, provenance records, <version>.json, index.json, and
// catalog.json last, each atomically.
func publish(ctx context.Context, tree *layout.Tree, s *staged, c content, report *ImportReport) error {
	listed := make(map[string]File, len(s.manifest.Files))
	for _, f := range s.manifest.Files {
		listed[f.Path] = f
	}
	var actions []action
	var problems []mirror.Problem
	for _, rel := range c.Files {
		k := c.Kinds[rel]
		if k == kindCatalog {
			continue
		}
		a := action{rel: rel, kind: k, from: s.path(MirrorDir + "/" + rel)}
		var conflict string
		var err error
		if k == kindFile {
			conflict, err = planFile(tree, &a, listed[MirrorDir+"/"+rel])
		} else {
			conflict, err = planDocument(tree, &a)
		}
		if err != nil {
			return err
		}
		if conflict != "" {
			problems = append(problems, mirror.Problem{Path: rel, Message: conflict})
		}
		actions = append(actions, a)
	}
	if len(problems) > 0 {
		return &RefusedError{What: "bundle", Problems: problems}
	}
	catalog, err := planCatalog(tree, s, c)
	if err != nil {
		return err
	}
	actions = append(actions, catalog)
	slices.SortStableFunc(actions, func(a, b action) int { return int(a.kind) - int(b.kind) })

	for _, a := range actions {
		if err := ctx.Err(); err != nil {
			return err
		}
		dest := tree.Path(filepath.FromSlash(a.rel))
		switch {
		case a.same:
			report.Unchanged++
			continue
		case a.from != "":
			err = layout.Rename(a.from, dest)
		default:
			err = layout.WriteFile(dest, a.data)
		}
		if err != nil {
			return err
		}
		report.Written++
	}
	return nil
}

// planFile plans an immutable file: published if the destination lacks
// it, kept if the destination has the same bytes, a conflict otherwise.
func planFile(tree *layout.Tree, a *action, f File) (string, error) {
	dest := tree.Path(filepath.FromSlash(a.rel))
	info, err := os.Lstat(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", err
	case !info.Mode().IsRegular():
		return fmt.Sprintf("the destination has a %s here, not a file", info.Mode().Type()), nil
	}
	sum, err := fileSHA256(dest)
	if err != nil {
		return "", err
	}
	if info.Size() != f.Size || sum != f.SHA256 {
		return fmt.Sprintf("the destination already holds different bytes here (SHA-256 %s, the bundle's is %s); "+
			"tfmirror never replaces an archive or a kept origin file: remove or rebuild it first if the bundle's is the right one", sum, f.SHA256), nil
	}
	a.same, a.from = true, ""
	return "", nil
}

func fileSHA256(p string) (string, error) {
	sum, _, err := hashing.HashFile(p)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// planDocument plans a JSON document: published as is if the destination
// lacks it, otherwise merged with the destination's.
func planDocument(tree *layout.Tree, a *action) (string, error) {
	existing, err := os.ReadFile(tree.Path(filepath.FromSlash(a.rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", a.rel, err)
	}
	incoming, err := os.ReadFile(a.from)
	if err != nil {
		return "", err
	}
	var merged []byte
	var conflict string
	switch a.kind {
	case kindIndex:
		merged, err = mergeIndex(existing, incoming)
	case kindVersion:
		merged, conflict, err = mergeVersion(existing, incoming)
	case kindProvenance:
		merged, conflict, err = mergeProvenance(existing, incoming)
	default:
		return "", fmt.Errorf("%s: no merge for this kind of file", a.rel)
	}
	if err != nil {
		return "", fmt.Errorf("existing %s: %w", a.rel, err)
	}
	if conflict != "" {
		return conflict, nil
	}
	setContent(a, existing, incoming, merged)
	return "", nil
}

// setContent makes a write the merged content, or nothing if the
// destination has it already, or a rename if it is the bundle's.
func setContent(a *action, existing, incoming, merged []byte) {
	switch {
	case existing != nil && bytes.Equal(merged, existing):
		a.same, a.from = true, ""
	case incoming != nil && bytes.Equal(merged, incoming):
	default:
		a.from, a.data = "", merged
	}
}

func mergeIndex(existing, incoming []byte) ([]byte, error) {
	dst, err := layout.DecodeIndex(existing)
	if err != nil {
		return nil, err
	}
	src, err := layout.DecodeIndex(incoming)
	if err != nil {
		return nil, err
	}
	for v := range src.Versions {
		dst.Versions[v] = struct{}{}
	}
	return layout.Encode(dst)
}

func mergeVersion(existing, incoming []byte) ([]byte, string, error) {
	dst, err := layout.DecodeVersion(existing)
	if err != nil {
		return nil, "", err
	}
	src, err := layout.DecodeVersion(incoming)
	if err != nil {
		return nil, "", err
	}
	for plat, e := range src.Archives {
		if d, ok := dst.Archives[plat]; ok {
			if d.URL != e.URL {
				return nil, fmt.Sprintf("%s: the destination lists the archive %q, the bundle %q", plat, d.URL, e.URL), nil
			}
			// The archive's bytes are the same (checked before):
			// every hash either side lists is valid for it.
			e.Hashes = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(d.Hashes), e.Hashes...))))
		}
		dst.Archives[plat] = e
	}
	data, err := layout.Encode(dst)
	return data, "", err
}

func mergeProvenance(existing, incoming []byte) ([]byte, string, error) {
	dst, err := layout.DecodeProvenance(existing)
	if err != nil {
		return nil, "", err
	}
	src, err := layout.DecodeProvenance(incoming)
	if err != nil {
		return nil, "", err
	}
	if dst.KeyID != src.KeyID || !slices.Equal(dst.SigningKeys, src.SigningKeys) {
		return nil, fmt.Sprintf("the release was verified with other signing keys in the destination (key %q) than in the bundle (key %q)", dst.KeyID, src.KeyID), nil
	}
	for plat, a := range src.Archives {
		if d, ok := dst.Archives[plat]; ok && d != a {
			return nil, fmt.Sprintf("%s: the destination records another package (%s) than the bundle (%s)", plat, d.H1, a.H1), nil
		}
		dst.Archives[plat] = a
	}
	data, err := layout.Encode(dst)
	return data, "", err
}

// planCatalog merges catalog.json: the destination's providers, the
// bundle's, and every provider the bundle holds.
func planCatalog(tree *layout.Tree, s *staged, c content) (action, error) {
	a := action{rel: layout.CatalogPath, kind: kindCatalog}
	read := func(p string) ([]byte, layout.Catalog, error) {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, layout.Catalog{}, nil
		}
		if err != nil {
			return nil, layout.Catalog{}, err
		}
		cat, err := layout.DecodeCatalog(data)
		return data, cat, err
	}
	existing, dst, err := read(tree.Path(layout.CatalogPath))
	if err != nil {
		return action{}, fmt.Errorf("existing %w", err)
	}
	incoming, src, err := read(s.path(MirrorDir + "/" + layout.CatalogPath))
	if err != nil {
		return action{}, err
	}
	providers := append(slices.Clone(dst.Providers), src.Providers...)
	for _, p := range c.Providers {
		providers = append(providers, p.String())
	}
	slices.Sort(providers)
	merged, err := layout.Encode(layout.Catalog{Providers: slices.Compact(providers)})
	if err != nil {
		return action{}, err
	}
	if incoming != nil {
		a.from = s.path(MirrorDir + "/" + layout.CatalogPath)
	}
	setContent(&a, existing, incoming, merged)
	return a, nil
}

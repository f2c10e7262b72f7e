package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// CatalogError means a mirror's catalog.json is not signed by a key the
// operator named (--catalog-key, the manifest's settings catalog_key): no
// signature, one that fails, or a
// catalog that lists no archives. It is exit 3.
type CatalogError struct {
	Location string
	Path     string // the file at fault, when one is: catalog.json.asc
	Err      error
}

func (e *CatalogError) Error() string {
	msg := fmt.Sprintf("the catalog of %s is not vouched for by the catalog key (--catalog-key, settings catalog_key): ", e.Location)
	if e.Path != "" {
		msg += e.Path + ": "
	}
	return msg + e.Err.Error()
}

func (e *CatalogError) Unwrap() error { return e.Err }

// ReadCatalog reads a tree's catalog.json, unsigned; an error wrapping
// fs.ErrNotExist for a mirror that is no tree or has no catalog.
func ReadCatalog(ctx context.Context, m mirror.Packages) (layout.Catalog, error) {
	tree, ok := m.(*layout.Tree)
	if !ok {
		return layout.Catalog{}, fmt.Errorf("%s has no catalog.json: %w", m.Location(), fs.ErrNotExist)
	}
	data, err := tree.Reader().ReadFile(ctx, layout.CatalogPath, layout.MaxDocumentBytes)
	if err != nil {
		return layout.Catalog{}, fmt.Errorf("read %s of %s: %w", layout.CatalogPath, tree.Location(), err)
	}
	return layout.DecodeCatalog(data)
}

// ReadSignedCatalog reads a tree's catalog.json and catalog.json.asc and
// checks the signature with keys. The catalog is returned only when the
// signature verifies over exactly the bytes read and the catalog is
// sealed (it lists its archives); anything else is a *CatalogError.
func ReadSignedCatalog(ctx context.Context, m mirror.Packages, keys *signing.TrustedKeys) (layout.Catalog, signing.Signer, error) {
	tree, ok := m.(*layout.Tree)
	if !ok {
		return layout.Catalog{}, signing.Signer{}, inputerr.Wrap(errors.New("--catalog-key: only a mirror tree (a directory, a URL, a bucket) has a catalog.json"))
	}
	fail := func(err error) (layout.Catalog, signing.Signer, error) {
		return layout.Catalog{}, signing.Signer{}, &CatalogError{Location: tree.Location(), Err: err}
	}
	r := tree.Reader()
	data, err := r.ReadFile(ctx, layout.CatalogPath, layout.MaxDocumentBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(fmt.Errorf("it has no %s", layout.CatalogPath))
	case notAFile(err):
		return layout.Catalog{}, signing.Signer{}, &CatalogError{Location: tree.Location(), Path: layout.CatalogPath, Err: err}
	case err != nil:
		return layout.Catalog{}, signing.Signer{}, fmt.Errorf("read %s of %s: %w", layout.CatalogPath, tree.Location(), err)
	}
	sig, err := r.ReadFile(ctx, layout.CatalogSignaturePath, layout.MaxSumsBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(fmt.Errorf("%s has no signature (%s)", layout.CatalogPath, layout.CatalogSignaturePath))
	case notAFile(err):
		return layout.Catalog{}, signing.Signer{}, &CatalogError{Location: tree.Location(), Path: layout.CatalogSignaturePath, Err: err}
	case err != nil:
		return layout.Catalog{}, signing.Signer{}, fmt.Errorf("read %s of %s: %w", layout.CatalogSignaturePath, tree.Location(), err)
	}
	signer, err := keys.VerifyArmored(data, sig)
	if err != nil {
		return layout.Catalog{}, signing.Signer{}, &CatalogError{Location: tree.Location(), Path: layout.CatalogSignaturePath, Err: err}
	}
	c, err := layout.DecodeCatalog(data)
	if err != nil {
		return fail(err)
	}
	if c.Archives == nil {
		return fail(fmt.Errorf("%s is signed but lists no archives (sign it with build --sign-key)", layout.CatalogPath))
	}
	return c, signer, nil
}

// notAFile reports whether a read failed because of what the tree holds
// at the path (a link, a directory, a file over the limit), not because
// the tree could not be read: a tampered tree, a problem to report.
func notAFile(err error) bool {
	return errors.Is(err, layout.ErrNotRegular) || errors.Is(err, layout.ErrTooLarge)
}

// CatalogProblems says where a signed catalog and the tree differ: an
// archive it lists that is missing or whose bytes or hashes are others,
// an archive of the tree it does not list (one the tree's documents
// name, or, where the store can list its files, any provider archive),
// and what it says beside the archives that the tree no longer says
// (layout.Tree.CheckCatalogFacts: providers, deprecations, signers,
// vulnerabilities.json).
func CatalogProblems(ctx context.Context, m mirror.Packages, c layout.Catalog) ([]mirror.Problem, error) {
	tree := m.(*layout.Tree)
	now, err := tree.CatalogArchives(ctx)
	if err != nil {
		return nil, err
	}
	stored, err := storedArchives(ctx, tree)
	if err != nil {
		return nil, err
	}
	var out []mirror.Problem
	add := func(rel, format string, args ...any) {
		out = append(out, mirror.Problem{Path: rel, Message: fmt.Sprintf(format, args...)})
	}
	for _, rel := range slices.Sorted(maps.Keys(c.Archives)) {
		want := c.Archives[rel]
		sum, err := tree.Rehash(ctx, rel)
		digest := hashing.ZH(sum)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			add(rel, "the signed catalog lists this archive, but the mirror does not hold it")
			continue
		case err != nil:
			add(rel, "the signed catalog lists this archive, but it cannot be read: %v", err)
			continue
		case digest != want.ZH:
			add(rel, "the signed catalog lists %s, but the archive's bytes are %s", want.ZH, digest)
		}
		got, ok := now[rel]
		switch {
		case !ok:
			// A <version>.json that no longer lists the archive as the
			// mirror's own, with the hashes its provenance gives, sends
			// clients elsewhere or to other hashes.
			add(rel, "the signed catalog lists this archive, but its version's <version>.json no longer lists it as the mirror's own with the hashes its provenance gives")
		case got != want:
			add(rel, "the signed catalog lists %s, but the mirror's documents say %s", describe(want), describe(got))
		}
	}
	unlisted := map[string]bool{}
	for rel := range now {
		unlisted[rel] = true
	}
	for _, rel := range stored {
		unlisted[rel] = true
	}
	for _, rel := range slices.Sorted(maps.Keys(unlisted)) {
		if _, ok := c.Archives[rel]; !ok {
			add(rel, "the mirror holds this archive, but the signed catalog does not list it")
		}
	}
	facts, err := tree.CheckCatalogFacts(ctx, c)
	if err != nil {
		return nil, err
	}
	return append(out, facts...), nil
}

// storedArchives are the provider archives a listable store holds
// (outside the module tree and the store's private files); none for a
// store that cannot list (a URL).
func storedArchives(ctx context.Context, tree *layout.Tree) ([]string, error) {
	if _, ok := tree.Reader().(layout.Store); !ok {
		return nil, nil
	}
	files, err := tree.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, ".zip") && strings.Count(f, "/") == 3 && !strings.HasPrefix(f, layout.ModulesDir+"/") {
			out = append(out, f)
		}
	}
	return out, nil
}

func describe(a layout.CatalogArchive) string {
	s := fmt.Sprintf("%s, %s", a.ZH, a.H1)
	if a.H1Zip != "" {
		s += ", " + string(a.H1Zip)
	}
	if a.SBOM != "" {
		s += ", SBOM " + a.SBOM
	} else {
		s += ", no SBOM"
	}
	return s
}

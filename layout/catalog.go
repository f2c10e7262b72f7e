package layout

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// CatalogPath is the root file that lists the providers a mirror holds.
// The network mirror protocol has no listing, so this is how a published
// mirror can be enumerated (by verify, for one). It is written after the
// providers' index.json files.
const CatalogPath = "catalog.json"

// Catalog is the content of catalog.json.
type Catalog struct {
	// Providers are provider addresses (host/namespace/type, Unicode host),
	// sorted.
	Providers []string `json:"providers"`
	// Modules are module package addresses (host/namespace/name/system),
	// sorted; absent in a mirror without modules.
	Modules []string `json:"modules,omitempty"`
}

// DecodeCatalog parses catalog.json.
func DecodeCatalog(data []byte) (Catalog, error) {
	var c Catalog
	if err := decodeStrict(data, &c); err != nil {
		return Catalog{}, fmt.Errorf("parse %s: %w", CatalogPath, err)
	}
	return c, nil
}

// ReadCatalog returns the tree's catalog.json; ok is false when it has
// none.
func (t *Tree) ReadCatalog(ctx context.Context) (c Catalog, ok bool, err error) {
	c, _, ok, err = t.readCatalog(ctx)
	return c, ok, err
}

// readCatalog is ReadCatalog that also returns the document's tag on a
// Conditional store, for a publication that writes it back.
func (t *Tree) readCatalog(ctx context.Context) (c Catalog, tag string, ok bool, err error) {
	data, tag, err := t.readTagged(ctx, CatalogPath, MaxDocumentBytes)
	if err != nil || data == nil {
		return Catalog{Providers: []string{}}, "", false, err
	}
	if c, err = DecodeCatalog(data); err != nil {
		return Catalog{}, "", false, fmt.Errorf("existing %w", err)
	}
	return c, tag, true, nil
}

// Providers lists the providers the tree holds, sorted: those its
// catalog.json names and, where the store can list its files, every
// host/namespace/type directory holding an index.json.
func (t *Tree) Providers(ctx context.Context) ([]addrs.Provider, error) {
	s, canList := t.r.(Store)
	if !canList {
		return t.providers(ctx, nil, false)
	}
	files, err := s.List(ctx, "")
	if err != nil {
		return nil, err
	}
	return t.providers(ctx, files, true)
}

// ProvidersIn is Providers for a caller that has listed the whole store
// already: files is that listing (Store.List of ""), which is not asked
// for again.
func (t *Tree) ProvidersIn(ctx context.Context, files []string) ([]addrs.Provider, error) {
	return t.providers(ctx, files, true)
}

// providers merges what catalog.json names with the providers whose
// index.json is among files, the store's listing when listed is set.
func (t *Tree) providers(ctx context.Context, files []string, listed bool) ([]addrs.Provider, error) {
	c, found, err := t.ReadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	if !found && !listed {
		return nil, fmt.Errorf("%s has no %s: a mirror built by tfmirror lists its providers there, and HTTP has no directory listing: %w", t.Location(), CatalogPath, fs.ErrNotExist)
	}
	raw := slices.Clone(c.Providers)
	for _, f := range files {
		if parts := strings.Split(f, "/"); len(parts) == 4 && parts[3] == "index.json" {
			raw = append(raw, addrs.Hostname(parts[0]).ForDisplay()+"/"+path.Join(parts[1], parts[2]))
		}
	}
	seen := map[string]bool{}
	var out []addrs.Provider
	for _, r := range raw {
		p, err := addrs.ParseProvider(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CatalogPath, err)
		}
		if !seen[p.String()] {
			seen[p.String()] = true
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b addrs.Provider) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

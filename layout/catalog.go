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
	data, err := t.readDoc(ctx, CatalogPath, MaxDocumentBytes)
	if err != nil || data == nil {
		return Catalog{Providers: []string{}}, false, err
	}
	if c, err = DecodeCatalog(data); err != nil {
		return Catalog{}, false, fmt.Errorf("existing %w", err)
	}
	return c, true, nil
}

// Providers lists the providers the tree holds, sorted: those its
// catalog.json names and, where the store can list its files, every
// host/namespace/type directory holding an index.json.
func (t *Tree) Providers(ctx context.Context) ([]addrs.Provider, error) {
	c, found, err := t.ReadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	raw := slices.Clone(c.Providers)
	s, canList := t.r.(Store)
	if !found && !canList {
		return nil, fmt.Errorf("%s has no %s: a mirror built by tfmirror lists its providers there, and HTTP has no directory listing: %w", t.Location(), CatalogPath, fs.ErrNotExist)
	}
	if canList {
		files, err := s.List(ctx, "")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if parts := strings.Split(f, "/"); len(parts) == 4 && parts[3] == "index.json" {
				raw = append(raw, addrs.Hostname(parts[0]).ForDisplay()+"/"+path.Join(parts[1], parts[2]))
			}
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

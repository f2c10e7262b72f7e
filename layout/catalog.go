package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
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

// addToCatalog records a provider in catalog.json, if it is not there yet.
func (t *Tree) addToCatalog(provider string) error {
	t.catalogMu.Lock()
	defer t.catalogMu.Unlock()
	path := t.Path(CatalogPath)
	c := Catalog{Providers: []string{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", CatalogPath, err)
	default:
		if c, err = DecodeCatalog(data); err != nil {
			return fmt.Errorf("existing %w", err)
		}
	}
	if slices.Contains(c.Providers, provider) {
		return nil
	}
	c.Providers = append(c.Providers, provider)
	slices.Sort(c.Providers)
	return writeJSON(path, c)
}

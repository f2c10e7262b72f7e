package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// TreeReader reads a mirror tree on the local filesystem.
type TreeReader struct{ Tree *layout.Tree }

var _ MirrorReader = TreeReader{}

// Providers lists every host/namespace/type directory holding an
// index.json, and every provider catalog.json names.
func (r TreeReader) Providers(context.Context) ([]addrs.Provider, error) {
	matches, err := filepath.Glob(filepath.Join(r.Tree.Root(), "*", "*", "*", "index.json"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []addrs.Provider
	add := func(raw string) error {
		p, err := addrs.ParseProvider(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", raw, err)
		}
		if !seen[p.String()] {
			seen[p.String()] = true
			out = append(out, p)
		}
		return nil
	}
	for _, m := range matches {
		typeDir := filepath.Dir(m)
		nsDir := filepath.Dir(typeDir)
		host := svchost.ForDisplay(filepath.Base(filepath.Dir(nsDir)))
		if err := add(host + "/" + filepath.Base(nsDir) + "/" + filepath.Base(typeDir)); err != nil {
			return nil, err
		}
	}
	catalog, err := r.catalog()
	if err != nil {
		return nil, err
	}
	for _, raw := range catalog.Providers {
		if err := add(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", layout.CatalogPath, err)
		}
	}
	return out, nil
}

func (r TreeReader) catalog() (layout.Catalog, error) {
	data, err := os.ReadFile(r.Tree.Path(layout.CatalogPath))
	if errors.Is(err, fs.ErrNotExist) {
		return layout.Catalog{}, nil
	}
	if err != nil {
		return layout.Catalog{}, err
	}
	return layout.DecodeCatalog(data)
}

// ReadDocument reads a file of the tree.
func (r TreeReader) ReadDocument(_ context.Context, rel string) ([]byte, error) {
	return os.ReadFile(r.Tree.Path(filepath.FromSlash(rel)))
}

// OpenFile opens a file of the tree.
func (r TreeReader) OpenFile(_ context.Context, rel string) (io.ReadCloser, error) {
	return os.Open(r.Tree.Path(filepath.FromSlash(rel)))
}

// Record returns the provenance kept for a release.
func (r TreeReader) Record(_ context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error) {
	return r.Tree.ReadRecord(p, v)
}

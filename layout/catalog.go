package layout

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
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
	// Archives lists every provider archive of the tree by path, with
	// its digests, once the catalog is sealed (SealCatalog): what a
	// signature of catalog.json vouches for. Absent (nil) in a catalog
	// never sealed; empty in a sealed one listing no archive.
	Archives map[string]CatalogArchive `json:"archives,omitzero"`
	// Deprecations are, by provider, the warnings the origin's version
	// list gave of it (a deprecation, say), as the tree keeps them
	// (WarningsPath); absent when no provider has any.
	Deprecations map[string][]string `json:"deprecations,omitempty"`
	// Signers are, by provider, the primary keys that signed the releases
	// the tree holds, from their provenance records (SignerHistory):
	// more than one is a key change. Absent when no release is signed.
	Signers map[string][]CatalogSigner `json:"signers,omitempty"`
	// Vulnerabilities names vulnerabilities.json by its SHA-256, with
	// the database its findings were matched against; absent when the
	// tree has none.
	Vulnerabilities *VulnerabilitiesRef `json:"vulnerabilities,omitempty"`
	// Changes pins, by path and SHA-256, the change records the change
	// index listed when the catalog was last signed (pinChanges), so that
	// its signature vouches for the mirror's history: a record edited,
	// removed or hidden from the index since is a problem for verify.
	// Only a signing SealCatalog sets it; absent when never signed.
	Changes []CatalogChange `json:"changes,omitempty"`
}

// CatalogSignaturePath is catalog.json's detached ASCII-armored OpenPGP
// signature, written after catalog.json and removed before catalog.json
// changes, so it never stands next to other bytes than those it signs.
const CatalogSignaturePath = CatalogPath + ".asc"

// CatalogArchive is what a sealed catalog says of one archive: the
// hashes a lock file records for it.
type CatalogArchive struct {
	// ZH is the SHA-256 of the archive's bytes.
	ZH hashing.Hash `json:"zh"`
	// H1 is the hash of the unpacked package, the one "tofu init"
	// records.
	H1 hashing.Hash `json:"h1"`
	// H1Zip is the hash of the zip's entries when it differs from H1 (a
	// zip with directory entries), which OpenTofu records too when it
	// installs from a mirror listing it.
	H1Zip hashing.Hash `json:"h1_zip,omitempty"`
	// SBOM is the name of the package's SBOM beside the archive, as its
	// provenance records it; "" when it has none.
	SBOM string `json:"sbom,omitempty"`
}

// Sums are the archive's hashes as a lock file entry takes them.
func (a CatalogArchive) Sums() hashing.ArchiveSums {
	s := hashing.ArchiveSums{ZH: a.ZH, H1: a.H1, H1Unpacked: a.H1}
	if a.H1Zip != "" {
		s.H1 = a.H1Zip
	}
	return s
}

// DecodeCatalog parses catalog.json.
func DecodeCatalog(data []byte) (Catalog, error) {
	var c Catalog
	if err := decodeStrict(data, &c); err != nil {
		return Catalog{}, fmt.Errorf("%s is not a catalog this tfmirror reads (another tool's file, or a newer tfmirror's): %w", CatalogPath, err)
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
		return Catalog{}, "", false, fmt.Errorf("the existing %w", err)
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

// Empty says whether the tree holds no provider and no module: a
// directory, URL or prefix that is no mirror (yet). A tree that cannot be
// read is not called empty.
func (t *Tree) Empty(ctx context.Context) bool {
	providers, err := t.Providers(ctx)
	if err != nil || len(providers) > 0 {
		return false
	}
	modules, err := t.Modules(ctx)
	return err == nil && len(modules) == 0
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

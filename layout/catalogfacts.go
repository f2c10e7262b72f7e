package layout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// CatalogSigner is a primary key that signed releases of a provider the
// tree holds, as catalog.json lists it (Catalog.Signers), from the
// releases' provenance records.
type CatalogSigner struct {
	KeyID       string `json:"key_id"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Created and Expires describe the key as the newest release it
	// signed records it (a key re-issued with a later expiry is the same
	// key).
	Created time.Time `json:"created,omitzero"`
	Expires time.Time `json:"expires,omitzero"`
	// FirstVersion and LastVersion are the oldest and newest releases it
	// signed, Releases how many.
	FirstVersion string `json:"first_version"`
	LastVersion  string `json:"last_version"`
	Releases     int    `json:"releases"`
	// Replaced is, for a key change, the key that signed the release
	// before FirstVersion (its fingerprint, or its key ID when the record
	// names no fingerprint); empty for the provider's first key.
	Replaced string `json:"replaced,omitempty"`
}

// KeyName names a key by its fingerprint, or its key ID when not known.
func (s CatalogSigner) KeyName() string {
	if s.Fingerprint != "" {
		return s.Fingerprint
	}
	return s.KeyID
}

// SignerHistory sums up the signers of a provider's releases: each
// primary key once (KeptSigner.SameKey), in the order of the oldest
// release it signed; a key that is not the first marks a key change at
// its FirstVersion, naming the key it replaced.
func SignerHistory(signers []KeptSigner) []CatalogSigner {
	sorted := slices.Clone(signers)
	slices.SortStableFunc(sorted, func(a, b KeptSigner) int { return addrs.CompareVersions(a.Version, b.Version) })
	var out []CatalogSigner
	var kept []KeptSigner // out[i]'s key
	for i, s := range sorted {
		j := slices.IndexFunc(kept, s.SameKey)
		if j < 0 {
			cs := CatalogSigner{KeyID: s.KeyID, FirstVersion: s.Version.String()}
			if i > 0 {
				cs.Replaced = out[slices.IndexFunc(kept, sorted[i-1].SameKey)].KeyName()
			}
			out, kept, j = append(out, cs), append(kept, s), len(out)
		}
		cs := &out[j]
		cs.LastVersion, cs.Releases = s.Version.String(), cs.Releases+1
		cs.Created, cs.Expires = s.Created, s.Expires
		if s.Fingerprint != "" {
			cs.Fingerprint, kept[j].Fingerprint = s.Fingerprint, s.Fingerprint
		}
	}
	return out
}

// DescribeCatalog brings what catalog.json says of each provider it lists
// in step with the tree: the kept warnings (Catalog.Deprecations, from
// WarningsPath) and the keys that signed its releases (Catalog.Signers,
// from the provenance records), so that both have one owner in the tree
// and catalog.json only repeats them; and its reference to
// vulnerabilities.json (Catalog.Vulnerabilities: the file's SHA-256, its
// database and counts), so that a signed catalog vouches for it. It writes catalog.json only when
// they changed (a sealed one loses its signature first, for
// SealCatalog to sign again), and reports whether it did.
func (t *Tree) DescribeCatalog(ctx context.Context) (bool, error) {
	if t.s == nil {
		return false, fmt.Errorf("describe %s of %s: %w", CatalogPath, t.Location(), ErrReadOnly)
	}
	t.catalogMu.Lock()
	defer t.catalogMu.Unlock()
	for attempt := 0; ; attempt++ {
		changed, err := t.describeCatalog(ctx)
		if !errors.Is(err, ErrChanged) || attempt+1 == maxAttempts {
			return changed, err
		}
		if err := backoff(ctx, attempt); err != nil {
			return false, err
		}
	}
}

func (t *Tree) describeCatalog(ctx context.Context) (bool, error) {
	data, tag, err := t.readTagged(ctx, CatalogPath, MaxDocumentBytes)
	if err != nil || data == nil {
		return false, err
	}
	c, err := DecodeCatalog(data)
	if err != nil {
		return false, fmt.Errorf("the existing %w", err)
	}
	if c.Deprecations, c.Signers, err = t.providerFacts(ctx, c.Providers); err != nil {
		return false, err
	}
	if c.Vulnerabilities, err = t.vulnerabilitiesRef(ctx); err != nil {
		return false, err
	}
	out, err := Encode(c)
	if err != nil || string(out) == string(data) {
		return false, err
	}
	if c.Archives != nil {
		return true, t.writeCatalog(ctx, out, tag) // sealed: its signature goes first
	}
	return true, t.apply(ctx, write{rel: CatalogPath, kind: KindCatalog, content: Content{Data: out}, checked: true, tag: tag})
}

// providerFacts reads the kept warnings and the signers of each provider
// named; nil maps when none has any.
func (t *Tree) providerFacts(ctx context.Context, names []string) (map[string][]string, map[string][]CatalogSigner, error) {
	warnings := make([][]string, len(names))
	signers := make([][]CatalogSigner, len(names))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(heldParallel)
	for i, name := range names {
		g.Go(func() error {
			p, err := addrs.ParseProvider(name)
			if err != nil {
				return fmt.Errorf("%s: %w", CatalogPath, err)
			}
			if warnings[i], err = t.ReadWarnings(gctx, p); err != nil {
				return err
			}
			kept, err := t.Signers(gctx, p)
			signers[i] = SignerHistory(kept)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	var ws map[string][]string
	var ss map[string][]CatalogSigner
	for i, name := range names {
		if len(warnings[i]) > 0 {
			if ws == nil {
				ws = map[string][]string{}
			}
			ws[name] = warnings[i]
		}
		if len(signers[i]) > 0 {
			if ss == nil {
				ss = map[string][]CatalogSigner{}
			}
			ss[name] = signers[i]
		}
	}
	return ws, ss, nil
}

// CheckCatalogFacts compares what a signed catalog says of the tree
// beside its archives (which CatalogArchives gives) with what the tree
// says now: the providers, each one's deprecations (its kept warnings)
// and signers (its releases' provenance), and vulnerabilities.json. Each
// difference is a problem: the tree changed after the catalog was signed.
func (t *Tree) CheckCatalogFacts(ctx context.Context, c Catalog) ([]Problem, error) {
	var out []Problem
	add := func(rel, format string, args ...any) {
		out = append(out, Problem{Path: rel, Message: fmt.Sprintf(format, args...)})
	}
	providers, err := t.Providers(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(providers))
	for _, p := range providers {
		names = append(names, p.String())
	}
	if !slices.Equal(names, c.Providers) {
		add(CatalogPath, "the signed catalog lists the providers %s, the mirror holds %s", strings.Join(c.Providers, ", "), strings.Join(names, ", "))
	}
	deprecations, signers, err := t.providerFacts(ctx, c.Providers)
	if err != nil {
		return nil, err
	}
	for _, name := range c.Providers {
		p, err := addrs.ParseProvider(name)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(deprecations[name], c.Deprecations[name]) {
			add(WarningsPath(p), "the signed catalog gives %s the warnings %q, the mirror keeps %q", name, c.Deprecations[name], deprecations[name])
		}
		if !slices.EqualFunc(signers[name], c.Signers[name], CatalogSigner.same) {
			add(CatalogPath, "the signed catalog says %s was signed by %s, its releases' provenance says %s", name, signerNames(c.Signers[name]), signerNames(signers[name]))
		}
	}
	if err := t.CheckVulnerabilitiesRef(ctx, c.Vulnerabilities); err != nil {
		add(VulnerabilitiesPath, "%v", err)
	}
	return out, nil
}

// same reports whether two signers say the same, times compared as
// instants.
func (s CatalogSigner) same(o CatalogSigner) bool {
	return s.KeyID == o.KeyID && s.Fingerprint == o.Fingerprint && s.Created.Equal(o.Created) && s.Expires.Equal(o.Expires) &&
		s.FirstVersion == o.FirstVersion && s.LastVersion == o.LastVersion && s.Releases == o.Releases && s.Replaced == o.Replaced
}

// signerNames lists signers as "KEYID (versions FIRST to LAST)".
func signerNames(ss []CatalogSigner) string {
	if len(ss) == 0 {
		return "no key"
	}
	parts := make([]string, 0, len(ss))
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%s (%s to %s)", s.KeyID, s.FirstVersion, s.LastVersion))
	}
	return strings.Join(parts, ", ")
}

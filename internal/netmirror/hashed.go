package netmirror

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httploc"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Hashed reads a published network mirror through the provider network
// mirror protocol alone (index.json, <version>.json and the archives they
// name), for a mirror that keeps no SHA256SUMS or signature: one made by
// "tofu providers mirror", another tool or a repository manager. The
// hashes its <version>.json lists are all that vouch for its packages.
//
// The archive URLs of its documents are locations the mirror names, held
// to rule (httpx.Locations) with the mirror as an OwnOnly namer: they
// must stay on the mirror's origin (scheme, host and port), unless the
// rule allows their host; redirects of their downloads are held to the
// rule as a registry's are.
type Hashed struct {
	c    *Client
	tree *layout.Tree
	rule httpx.Locations
}

var _ mirror.HashedPackages = (*Hashed)(nil)

// NewHashed reads the mirror c reads, its archive URLs held to rule.
func NewHashed(c *Client, rule httpx.Locations) *Hashed {
	return &Hashed{c: c, tree: layout.NewTree(c), rule: rule}
}

// namer is the mirror as the namer of its archive URLs.
func (h *Hashed) namer() httpx.Namer {
	return httpx.Namer{Name: h.Location(), Kind: "network mirror", Own: []*url.URL{h.c.base}, OwnOnly: true}
}

// Location is the mirror's URL, without credentials.
func (h *Hashed) Location() string { return h.c.Location() }

// Versions lists the versions the mirror's index.json lists.
func (h *Hashed) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	return h.tree.Versions(ctx, p)
}

// Describe reads the package's archive URL and hashes from the version's
// document. The URL is resolved against the document's, as clients do,
// must be http or https without credentials, and is refused off the
// mirror's origin (unless the rule allows its host).
func (h *Hashed) Describe(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (mirror.HashedPackage, error) {
	doc, err := h.tree.ReadVersion(ctx, p, v)
	if err != nil {
		return mirror.HashedPackage{}, fmt.Errorf("%s: %s %s: %w", h.Location(), p, v, err)
	}
	a, ok := doc.Archives[plat.String()]
	if !ok {
		return mirror.HashedPackage{}, fmt.Errorf("%s holds no %s package of %s %s: %w", h.Location(), plat, p, v, mirror.ErrPlatformUnavailable)
	}
	ref, err := url.Parse(a.URL)
	if err != nil {
		return mirror.HashedPackage{}, fmt.Errorf("%s: %s %s %s: archive url: %w", h.Location(), p, v, plat, excerpt.Error(err))
	}
	u := h.c.url(layout.VersionPath(p, v)).ResolveReference(ref)
	if (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Host == "" {
		return mirror.HashedPackage{}, fmt.Errorf("%s: %s %s %s: the archive url must be an http or https URL without credentials", h.Location(), p, v, plat)
	}
	if err := h.rule.Check(ctx, h.namer(), u); err != nil {
		return mirror.HashedPackage{}, fmt.Errorf("%s: %s %s %s: archive url: %w", h.Location(), p, v, plat, err)
	}
	return mirror.HashedPackage{Ref: u.String(), Hashes: a.Hashes}, nil
}

// Platforms lists the platforms the version's document lists.
func (h *Hashed) Platforms(ctx context.Context, p addrs.Provider, v addrs.Version) ([]addrs.Platform, error) {
	doc, err := h.tree.ReadVersion(ctx, p, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %s: %w", h.Location(), p, v, err)
	}
	var out []addrs.Platform
	for name := range doc.Archives {
		plat, err := addrs.ParsePlatform(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %s: %w", h.Location(), p, v, err)
		}
		out = append(out, plat)
	}
	slices.SortFunc(out, func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Fetch downloads an archive Describe named, with the client's retries
// and limits, under the location rule.
func (h *Hashed) Fetch(ctx context.Context, ref string, sink mirror.Sink) error {
	u, err := url.Parse(ref)
	if err != nil {
		return fmt.Errorf("%s: %w", h.Location(), err)
	}
	if err := h.rule.Check(ctx, h.namer(), u); err != nil {
		return fmt.Errorf("%s: %w", h.Location(), err)
	}
	return httploc.New(h.c.fetch, u).NamedBy(h.rule, h.namer()).Fetch(ctx, sink)
}

package registry

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httploc"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/mirror"
)

// AvailableVersions lists the versions the provider's registry offers.
func (c *Client) AvailableVersions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	rs, err := c.AvailableReleases(ctx, p)
	if err != nil {
		return nil, err
	}
	list := make(addrs.VersionList, len(rs))
	for i, r := range rs {
		list[i] = r.Version
	}
	return list, nil
}

// AvailableReleases lists the versions the provider's registry offers,
// each with the platforms the list names for it (mirror.PlatformLister).
func (c *Client) AvailableReleases(ctx context.Context, p addrs.Provider) ([]mirror.ListedRelease, error) {
	l, err := c.ProviderListing(ctx, p)
	return l.Releases, err
}

// ProviderListing lists the versions the provider's registry offers, with
// their platforms and the list's warnings (mirror.WarningLister).
func (c *Client) ProviderListing(ctx context.Context, p addrs.Provider) (mirror.Listing, error) {
	base, err := c.serviceURL(ctx, p.Hostname)
	if err != nil {
		return mirror.Listing{}, err
	}
	u := base.ResolveReference(&url.URL{Path: path.Join(p.Namespace, p.Type, "versions")})
	data, final, err := c.apiGet(ctx, p.Hostname, u, maxVersionsBytes)
	if isNotFound(err) {
		return mirror.Listing{}, unknownProvider{p}
	}
	if err != nil {
		return mirror.Listing{}, err
	}
	list, err := parseVersions(data)
	if err != nil {
		return mirror.Listing{}, fmt.Errorf("parse versions list from %s: %w", httpx.Redact(final), err)
	}
	return list, nil
}

// parseVersions parses a versions document (regproto.Versions), of at
// most maxVersions versions of at most maxPlatforms platforms each, and
// at most maxWarnings warnings, kept as cutWarnings says. Like
// OpenTofu, one invalid version string fails the whole list; a platform
// that is not one (an empty or malformed os or arch) is left out, as
// OpenTofu does not read them at all. Equal platforms share one value.
func parseVersions(data []byte) (mirror.Listing, error) {
	doc := newProviderVersions()
	if err := decodeJSON(data, &doc); err != nil {
		return mirror.Listing{}, err
	}
	list := make([]mirror.ListedRelease, 0, len(doc.Versions.items))
	seen := make(map[regproto.Platform]addrs.Platform)
	for _, entry := range doc.Versions.items {
		v, err := addrs.ParseVersion(entry.Version)
		if err != nil {
			return mirror.Listing{}, err
		}
		r := mirror.ListedRelease{Version: v}
		for _, e := range entry.Platforms.items {
			plat, ok := seen[e]
			if !ok {
				if plat, err = addrs.ParsePlatform(e.OS + "_" + e.Arch); err != nil {
					continue
				}
				seen[e] = plat
			}
			r.Platforms = append(r.Platforms, plat)
		}
		list = append(list, r)
	}
	return mirror.Listing{Releases: list, Warnings: cutWarnings(doc.Warnings.items), CanWarn: true}, nil
}

// PackageMeta reads the download document of one package.
func (c *Client) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (mirror.PackageMeta, error) {
	base, err := c.serviceURL(ctx, p.Hostname)
	if err != nil {
		return mirror.PackageMeta{}, err
	}
	rel := path.Join(p.Namespace, p.Type, v.String(), "download", plat.OS, plat.Arch)
	docURL := base.ResolveReference(&url.URL{Path: rel})
	data, final, err := c.apiGet(ctx, p.Hostname, docURL, maxDownloadBytes)
	if isNotFound(err) {
		return mirror.PackageMeta{}, fmt.Errorf("%s %s %s: %w", p, v, plat, mirror.ErrPlatformUnavailable)
	}
	if err != nil {
		return mirror.PackageMeta{}, err
	}
	by := httpx.Namer{Name: p.Hostname.ForDisplay(), Kind: "registry", Own: []*url.URL{docURL, {Scheme: "https", Host: string(p.Hostname)}}}
	meta, err := parseDownload(data, final, plat, c.fetch)
	if err == nil {
		err = c.checkLocations(ctx, by, &meta)
	}
	if err != nil {
		return mirror.PackageMeta{}, fmt.Errorf("parse download document %s: %w", httpx.Redact(final), err)
	}
	return meta, nil
}

// parseDownload parses and checks a download document fetched from
// docURL; the files it names are fetched with f.
func parseDownload(data []byte, docURL *url.URL, plat addrs.Platform, f *httpx.Fetcher) (mirror.PackageMeta, error) {
	var doc regproto.Download
	if err := decodeJSON(data, &doc); err != nil {
		return mirror.PackageMeta{}, err
	}
	meta, err := packageMeta(doc, docURL, plat, f)
	if err != nil {
		return mirror.PackageMeta{}, err
	}
	if meta.Size, err = announcedSize(doc.Packages, plat, meta.SHA256); err != nil {
		return mirror.PackageMeta{}, fmt.Errorf("packages: %w", err)
	}
	return meta, nil
}

// checkLocations holds the URLs of a download document to the location
// rule, by the registry that named them, and makes them fetched under it
// (its redirects too).
func (c *Client) checkLocations(ctx context.Context, by httpx.Namer, meta *mirror.PackageMeta) error {
	for _, ref := range []struct {
		name string
		loc  *mirror.Location
	}{
		{"download_url", &meta.Archive}, {"shasums_url", &meta.Sums}, {"shasums_signature_url", &meta.Signature},
	} {
		l, ok := (*ref.loc).(httploc.Location)
		if !ok {
			continue
		}
		if err := c.locs.Check(ctx, by, l.URL()); err != nil {
			return fmt.Errorf("%s: %w", ref.name, err)
		}
		*ref.loc = l.NamedBy(c.locs, by)
	}
	return nil
}

// announcedSize is the size the "packages" field gives the platform's
// package, 0 without one. As in OpenTofu, a listed package must have a
// positive size, and no zh: hash other than the shasum field's.
func announcedSize(pkgs map[string]regproto.Package, plat addrs.Platform, sum [sha256.Size]byte) (int64, error) {
	info, ok := pkgs[plat.String()]
	if !ok {
		return 0, nil
	}
	if info.PackageSize <= 0 {
		return 0, fmt.Errorf("%s: package_size must be more than 0, not %d", plat, info.PackageSize)
	}
	want := hashing.ZH(sum)
	for _, h := range info.Hashes {
		if strings.HasPrefix(h, "zh:") && !strings.EqualFold(h, string(want)) {
			return 0, fmt.Errorf("%s: hash %s does not match the shasum field %s", plat, excerpt.Quote(h), want)
		}
	}
	return info.PackageSize, nil
}

// packageMeta checks a download document and resolves its URLs into
// locations fetched with f.
func packageMeta(d regproto.Download, docURL *url.URL, plat addrs.Platform, f *httpx.Fetcher) (mirror.PackageMeta, error) {
	if d.OS != plat.OS || d.Arch != plat.Arch {
		return mirror.PackageMeta{}, fmt.Errorf("asked for %s, the registry answered for %s", plat, excerpt.Text(d.OS+"_"+d.Arch, 0))
	}
	if err := checkProtocols(d.Protocols); err != nil {
		return mirror.PackageMeta{}, err
	}
	if err := checkFilename(d.Filename); err != nil {
		return mirror.PackageMeta{}, err
	}
	sum, err := hashing.ParseHex(d.Shasum)
	if err != nil {
		return mirror.PackageMeta{}, fmt.Errorf("shasum: %w", err)
	}
	meta := mirror.PackageMeta{Filename: d.Filename, SHA256: sum}
	for _, ref := range []struct {
		name string
		raw  string
		dst  *mirror.Location
	}{
		{"download_url", d.DownloadURL, &meta.Archive},
		{"shasums_url", d.ShasumsURL, &meta.Sums},
		{"shasums_signature_url", d.ShasumsSignatureURL, &meta.Signature},
	} {
		u, err := resolve(docURL, ref.raw)
		if err != nil {
			return mirror.PackageMeta{}, fmt.Errorf("%s: %w", ref.name, err)
		}
		*ref.dst = httploc.New(f, u)
	}
	for _, k := range d.SigningKeys.GPGPublicKeys {
		meta.SigningKeys = append(meta.SigningKeys, k.ASCIIArmor)
	}
	return meta, nil
}

// resolve resolves a reference relative to the document that named it and
// requires an http or https URL without embedded credentials. Its errors
// show the URL only as httpx.Redact does.
func resolve(base *url.URL, ref string) (*url.URL, error) {
	if ref == "" {
		return nil, fmt.Errorf("missing")
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("invalid URL: %w", httpx.UnwrapURLError(err))
	}
	u := base.ResolveReference(r)
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("URL %s must use https or http", httpx.Redact(u))
	}
	if u.User != nil {
		return nil, fmt.Errorf("URL %s must not contain credentials", httpx.Redact(u))
	}
	return u, nil
}

// supportedProtocols are the plugin protocol major versions OpenTofu runs.
var supportedProtocols = addrs.MustParseConstraints(">= 5, < 7")

func checkProtocols(protocols []string) error {
	if len(protocols) == 0 {
		return nil
	}
	for _, raw := range protocols {
		v, err := addrs.ParseVersion(raw) // guarded: a huge number is an error, not a panic
		if err == nil && supportedProtocols.Has(v) {
			return nil
		}
	}
	return fmt.Errorf("the package speaks plugin protocols %s; OpenTofu supports 5 and 6", excerpt.Text(strings.Join(protocols, ", "), 0))
}

func checkFilename(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return fmt.Errorf("invalid filename %s", excerpt.Quote(name))
	}
	return nil
}

// unknownProvider is a registry's 404 for a provider's versions: it is
// mirror.ErrProviderUnknown, said once, with what to check.
type unknownProvider struct{ p addrs.Provider }

func (e unknownProvider) Error() string {
	return fmt.Sprintf("the registry at %s does not know provider %s (check its namespace and type for a typo; a provider another registry publishes needs that registry's host in its address)",
		e.p.Hostname.ForDisplay(), e.p)
}

func (unknownProvider) Is(target error) bool { return target == mirror.ErrProviderUnknown }

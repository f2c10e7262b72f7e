package mirror

import (
	"context"
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Route is one upstream of a RoutedSource: the providers it serves and
// where they come from, as one method of OpenTofu's provider_installation
// block.
type Route struct {
	// Name says which upstream it is, in messages ("network_mirror
	// https://...").
	Name string
	// Include and Exclude are provider patterns ("HOST/NAMESPACE/TYPE",
	// each part a name or "*"); no Include means every provider.
	Include, Exclude []string
	Source           Source
}

// RoutedSource takes each provider from the first route whose patterns
// match it, as OpenTofu's provider_installation block does. A package's
// locations are its route's, so each document comes from the upstream
// that described it.
type RoutedSource struct {
	Routes []Route
}

// CheckPattern reports why a provider pattern is not one OpenTofu
// accepts, if it is not.
func CheckPattern(pattern string) error {
	parts := strings.Split(pattern, "/")
	if len(parts) != 3 {
		return fmt.Errorf("provider pattern %q: want HOST/NAMESPACE/TYPE, each a name or *", pattern)
	}
	if parts[0] == "*" && (parts[1] != "*" || parts[2] != "*") || parts[1] == "*" && parts[2] != "*" {
		return fmt.Errorf("provider pattern %q: a * may only be followed by more *", pattern)
	}
	return nil
}

// matches reports whether p matches a pattern: each part a wildcard or
// equal (hostnames in their comparison form, case-insensitively).
func matches(pattern string, p addrs.Provider) bool {
	parts := strings.Split(pattern, "/")
	if len(parts) != 3 {
		return false
	}
	want := []string{p.Hostname.ForDisplay(), p.Namespace, p.Type}
	for i, part := range parts {
		if part == "*" {
			continue
		}
		if i == 0 {
			if h, err := addrs.ParseProvider(part + "/x/y"); err != nil || h.Hostname != p.Hostname {
				return false
			}
			continue
		}
		if !strings.EqualFold(part, want[i]) {
			return false
		}
	}
	return true
}

// Serves reports whether the route takes provider p.
func (r Route) Serves(p addrs.Provider) bool {
	for _, x := range r.Exclude {
		if matches(x, p) {
			return false
		}
	}
	if len(r.Include) == 0 {
		return true
	}
	for _, in := range r.Include {
		if matches(in, p) {
			return true
		}
	}
	return false
}

func (s *RoutedSource) route(p addrs.Provider) (int, error) {
	for i, r := range s.Routes {
		if r.Serves(p) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no upstream of the manifest's provider_installation block takes %s (check include and exclude): %w", p, ErrProviderUnknown)
}

// AvailableVersions lists the versions p's upstream offers.
func (s *RoutedSource) AvailableVersions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	i, err := s.route(p)
	if err != nil {
		return nil, err
	}
	vs, err := s.Routes[i].Source.AvailableVersions(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Routes[i].Name, err)
	}
	return vs, nil
}

// AvailableReleases lists the versions p's upstream offers, with the
// platforms its version list names, when it names them.
func (s *RoutedSource) AvailableReleases(ctx context.Context, p addrs.Provider) ([]ListedRelease, error) {
	i, err := s.route(p)
	if err != nil {
		return nil, err
	}
	lister, ok := s.Routes[i].Source.(PlatformLister)
	if !ok {
		vs, err := s.AvailableVersions(ctx, p)
		return unlisted(vs), err
	}
	rs, err := lister.AvailableReleases(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Routes[i].Name, err)
	}
	return rs, nil
}

// ProviderListing lists the versions p's upstream offers, with its
// warnings when its list has a place for them.
func (s *RoutedSource) ProviderListing(ctx context.Context, p addrs.Provider) (Listing, error) {
	i, err := s.route(p)
	if err != nil {
		return Listing{}, err
	}
	lister, ok := s.Routes[i].Source.(WarningLister)
	if !ok {
		rs, err := s.AvailableReleases(ctx, p)
		return Listing{Releases: rs}, err
	}
	l, err := lister.ProviderListing(ctx, p)
	if err != nil {
		return Listing{}, fmt.Errorf("%s: %w", s.Routes[i].Name, err)
	}
	return l, nil
}

// unlisted are versions whose platforms no list names.
func unlisted(vs addrs.VersionList) []ListedRelease {
	out := make([]ListedRelease, len(vs))
	for i, v := range vs {
		out[i] = ListedRelease{Version: v}
	}
	return out
}

// PackageMeta describes a package as p's upstream does.
func (s *RoutedSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	i, err := s.route(p)
	if err != nil {
		return PackageMeta{}, err
	}
	meta, err := s.Routes[i].Source.PackageMeta(ctx, p, v, plat)
	if err != nil {
		return PackageMeta{}, fmt.Errorf("%s: %w", s.Routes[i].Name, err)
	}
	return meta, nil
}

package mirror

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Deprecation is what an origin's version list says of a provider as a
// whole (the provider registry protocol's "warnings": a deprecation,
// say), which clients print at init and a mirror keeps for them.
type Deprecation struct {
	Provider addrs.Provider
	// Warnings are the list's warnings, in its order; none when it sends
	// none (then a mirror's kept warnings of the provider go).
	Warnings []string
}

// Describe says the warnings in words, each escaped and bounded as
// outside text is.
func (d Deprecation) Describe() string {
	quoted := make([]string, len(d.Warnings))
	for i, w := range d.Warnings {
		quoted[i] = excerpt.Text(w, excerpt.MaxMessage)
	}
	return d.Provider.String() + ": the registry warns: " + strings.Join(quoted, "; ")
}

// listReleases lists a provider's versions, with their platforms when
// the source's version list names them, and records its warnings when
// the list has a place for them (WarningLister).
func (b *Builder) listReleases(ctx context.Context, p addrs.Provider) ([]ListedRelease, error) {
	if lister, ok := b.Source.(WarningLister); ok {
		l, err := lister.ProviderListing(ctx, p)
		if err == nil && l.CanWarn {
			b.deprecate(Deprecation{Provider: p, Warnings: l.Warnings})
		}
		return l.Releases, err
	}
	if lister, ok := b.Source.(PlatformLister); ok {
		return lister.AvailableReleases(ctx, p)
	}
	vs, err := b.Source.AvailableVersions(ctx, p)
	return unlisted(vs), err
}

// deprecate records what p's version list warned of, reporting it the
// first time it has warnings.
func (b *Builder) deprecate(d Deprecation) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.deprecations == nil {
		b.deprecations = map[string]Deprecation{}
	}
	if _, seen := b.deprecations[d.Provider.String()]; seen {
		return
	}
	b.deprecations[d.Provider.String()] = d
	if len(d.Warnings) > 0 && b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Deprecation: &d})
	}
}

// listedDeprecations are the warnings of every provider whose version
// list had a place for them, sorted by provider.
func (b *Builder) listedDeprecations() []Deprecation {
	keys := slices.Sorted(maps.Keys(b.deprecations))
	out := make([]Deprecation, len(keys))
	for i, k := range keys {
		out[i] = b.deprecations[k]
	}
	return out
}

package mirror

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// DefaultParallel is the default number of concurrent downloads.
const DefaultParallel = 8

// Options are the policies of a build.
type Options struct {
	// Strict turns a release's missing platform into a failure.
	Strict bool
	// RequireSignatures refuses packages without a valid signature even on
	// registry.opentofu.org, where OpenTofu itself accepts them.
	RequireSignatures bool
	// Parallel bounds concurrent downloads; 0 means DefaultParallel.
	Parallel int
	// OnEvent, if set, is called for every finished package and warning.
	// Calls are serialized.
	OnEvent func(Event)
}

// Builder fetches, verifies and publishes provider packages into a tree.
type Builder struct {
	Source  Source
	Checker SignatureChecker
	Tree    *layout.Tree
	Options Options

	mu        sync.Mutex
	report    *Report
	downloads chan struct{}
}

// release is one provider version to mirror.
type release struct {
	req     Requirement
	version addrs.Version
}

// Build mirrors every requirement and returns what happened. Failures of
// one package or provider never stop the others; only ctx does.
func (b *Builder) Build(ctx context.Context, reqs []Requirement) *Report {
	b.report = &Report{}
	b.downloads = make(chan struct{}, b.parallel())
	releases := b.resolveAll(ctx, reqs)
	var g errgroup.Group
	g.SetLimit(b.parallel())
	for _, r := range releases {
		g.Go(func() error {
			b.buildRelease(ctx, r)
			return nil
		})
	}
	_ = g.Wait()
	b.report.sort()
	return b.report
}

func (b *Builder) parallel() int {
	if b.Options.Parallel > 0 {
		return b.Options.Parallel
	}
	return DefaultParallel
}

// resolveAll lists each provider's versions and selects the releases to
// mirror, in requirement order.
func (b *Builder) resolveAll(ctx context.Context, reqs []Requirement) []release {
	selected := make([][]release, len(reqs))
	var g errgroup.Group
	g.SetLimit(b.parallel())
	for i, req := range reqs {
		g.Go(func() error {
			selected[i] = b.resolve(ctx, req)
			return nil
		})
	}
	_ = g.Wait()
	return mergeReleases(selected)
}

// mergeReleases joins releases that several requirements select, so each
// provider version is built once, for the union of their platforms.
func mergeReleases(selected [][]release) []release {
	var all []release
	index := make(map[string]int)
	for _, rs := range selected {
		for _, r := range rs {
			key := r.req.Provider.String() + " " + r.version.String()
			i, seen := index[key]
			if !seen {
				index[key] = len(all)
				r.req.Platforms = slices.Clone(r.req.Platforms)
				all = append(all, r)
				continue
			}
			for _, plat := range r.req.Platforms {
				if !slices.Contains(all[i].req.Platforms, plat) {
					all[i].req.Platforms = append(all[i].req.Platforms, plat)
				}
			}
		}
	}
	return all
}

func (b *Builder) resolve(ctx context.Context, req Requirement) []release {
	if err := CheckProvider(req.Provider); err != nil {
		b.fail(&ProviderError{Provider: req.Provider, Err: err})
		return nil
	}
	available, err := b.Source.AvailableVersions(ctx, req.Provider)
	if err != nil {
		b.fail(&ProviderError{Provider: req.Provider, Err: fmt.Errorf("list versions: %w", err)})
		return nil
	}
	versions := req.selectVersions(available)
	if len(versions) == 0 {
		b.fail(&ProviderError{Provider: req.Provider, Err: noMatchError(req, available)})
		return nil
	}
	out := make([]release, len(versions))
	for i, v := range versions {
		out[i] = release{req: req, version: v}
	}
	return out
}

func noMatchError(req Requirement, available addrs.VersionList) error {
	if len(available) == 0 {
		return fmt.Errorf("the origin lists no versions")
	}
	available.Sort()
	newest := available[len(available)-1]
	return fmt.Errorf("no released version matches %q (newest available: %s)", req.Constraints, newest)
}

func (b *Builder) emit(r Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.report.Results = append(b.report.Results, r)
	if b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Result: &r})
	}
}

func (b *Builder) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.report.Warnings = append(b.report.Warnings, msg)
	if b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Warning: msg})
	}
}

func (b *Builder) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.report.Errors = append(b.report.Errors, err)
	if b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Error: err})
	}
}

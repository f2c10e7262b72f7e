package mirror

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/syncx"
	"github.com/tfmirror/tfmirror/layout"
)

// DefaultParallel is the default number of concurrent downloads.
const DefaultParallel = 8

// Options are the policies of a build.
type Options struct {
	// Strict turns a release's missing platform into a failure.
	Strict bool
	// Trust is the signature policy.
	Trust TrustPolicy
	// Parallel bounds concurrent downloads; 0 means DefaultParallel.
	Parallel int
	// HashParallel bounds concurrent hashing, which is CPU-bound; 0 means
	// one per CPU. Downloads and hashing overlap.
	HashParallel int
	// ZipLimits bound what an archive may unpack to; a zero field takes
	// hashing.DefaultZipLimits' (ZipLimits.WithDefaults).
	ZipLimits hashing.ZipLimits
	// VerifyExisting re-hashes archives already in every destination,
	// read again from the destination (never from a digest it records),
	// instead of trusting their recorded size; one that does not match is
	// fetched again and replaced (layout.Release.VerifyExisting).
	VerifyExisting bool
	// Shard limits the build to one part of its plan; the zero Shard is
	// the whole plan.
	Shard Shard
	// Cooldown, if set, holds back releases younger than their
	// requirement's MinAge, and records when versions are first seen.
	Cooldown *Cooldown
	// Recheck selects releases already held whose SHA256SUMS and
	// signature are fetched again and compared with what the mirror kept.
	Recheck Recheck
	// Describe, if set, makes the SBOM of every package the build
	// verifies, published beside it. With VerifyExisting, a package the
	// destinations hold without one is read again to get one.
	Describe Describer
	// Advise, if set, gives each package the build verifies its known
	// advisories, from the build information the h1: pass read (no
	// second read); they are reported with the package, and Advisories
	// says what the build does with them.
	Advise Advisor
	// AdviseKept, if set, gives the packages the build keeps (every
	// destination holds them already) their known advisories, from what
	// the destinations hold of them (their SBOMs), so a build with a
	// newer database reports them as it reports what it downloads. The
	// policy's warn applies to them; hold and refuse do not: they are
	// published already.
	AdviseKept KeptAdvisor
	// Advisories is the vulnerabilities policy: publish and warn (the
	// zero policy), hold a release back, or refuse it.
	Advisories AdvisoryPolicy
	// OnEvent, if set, is called for every finished package and warning.
	// Calls are serialized.
	OnEvent func(Event)
}

// Builder fetches, verifies and publishes provider packages into a tree.
type Builder struct {
	Source  Source
	Checker SignatureChecker
	// Dests are the destinations: Plan keeps the packages complete in
	// every one of them (they may be opened for reading only while
	// planning), and Execute publishes into each, in order, from one
	// download. Their locks must be held for Execute.
	Dests []Destination
	// Work is the local workspace downloads are staged in.
	Work    *layout.Workspace
	Options Options

	mu           sync.Mutex
	report       *Report
	planWarnings []string               // warned while planning, before the report
	deprecations map[string]Deprecation // by provider, from version lists that can say
	warned       map[string]bool        // every warning given, so each is given once
	downloads    chan struct{}
	hashes       *syncx.Slots
	meta         chan struct{} // metadata requests: small, latency-bound
	ahead        []aheadDest   // one per destination, in order
	bytes        atomic.Int64
	sizes        sizeTally
	// summarized counts the archives whose h1: hashes came from the
	// entries hashed while they downloaded (the tests read it).
	summarized atomic.Int32
	done       atomic.Int32
	histories  histories
}

// release is one provider version to mirror.
type release struct {
	req     Requirement
	version addrs.Version
	// kept are the platforms already complete in the tree; req.Platforms
	// holds only those still to fetch.
	kept []kept
	// unpublished are the platforms asked for that the version list says
	// the release does not publish, and listed what it says it does
	// publish (kept only when something is unpublished); both nil when
	// the list says nothing of platforms.
	unpublished, listed []addrs.Platform
}

// Plan is the releases a build will mirror, resolved from requirements.
type Plan struct {
	releases []release
}

// Releases returns how many provider versions the plan holds.
func (p *Plan) Releases() int { return len(p.releases) }

// Packages returns how many packages the plan holds, kept ones included.
func (p *Plan) Packages() int {
	n := 0
	for _, r := range p.releases {
		n += len(r.kept) + len(r.req.Platforms)
	}
	return n
}

// Progress is a snapshot of a running build.
type Progress struct {
	Done  int   // packages finished, whatever their outcome
	Bytes int64 // archive bytes downloaded so far
	// Sized downloads have had their whole size announced by their
	// origin, Expected bytes together, Complete of them all their bytes:
	// what an estimate of the time left goes by.
	Sized    int
	Expected int64
	Complete int
}

// Progress reports how far Execute has come; safe to call at any time.
func (b *Builder) Progress() Progress {
	return Progress{Done: int(b.done.Load()), Bytes: b.bytes.Load(), Sized: int(b.sizes.downloads.Load()), Expected: b.sizes.bytes.Load(), Complete: int(b.sizes.complete.Load())}
}

// sizeTally adds up the sizes origins announce for a build's downloads.
type sizeTally struct {
	downloads atomic.Int32 // downloads whose size is known
	bytes     atomic.Int64 // the sum of their sizes
	complete  atomic.Int32 // those of them that have all their bytes
}

// announce counts a download's size, once per download: old is what it
// announced before (0 for nothing).
func (t *sizeTally) announce(old, size int64) {
	if old == 0 {
		t.downloads.Add(1)
	}
	t.bytes.Add(size - old)
}

// Plan lists each required provider's versions at the origin and selects
// the releases to mirror. It writes nothing. If any requirement cannot be
// resolved, it returns every such failure as *ResolveError values joined,
// and no plan: a build does not start publishing half of what was asked.
func (b *Builder) Plan(ctx context.Context, reqs []Requirement) (*Plan, error) {
	selected := make([][]release, len(reqs))
	errs := make([]error, len(reqs))
	var g errgroup.Group
	g.SetLimit(b.metaParallel())
	for i, req := range reqs {
		g.Go(func() error {
			selected[i], errs[i] = b.resolve(ctx, req)
			return nil
		})
	}
	_ = g.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	merged := mergeReleases(selected)
	if err := b.checkPlatforms(merged); err != nil {
		return nil, err
	}
	plan := &Plan{releases: b.Options.Shard.shard(merged)}
	b.markKept(ctx, plan.releases)
	return plan, nil
}

// Execute fetches, verifies and publishes every package of the plan.
// Failures of one package never stop the others; only ctx does.
func (b *Builder) Execute(ctx context.Context, plan *Plan) *Report {
	b.mu.Lock()
	b.report = &Report{Warnings: b.planWarnings, Deprecations: b.listedDeprecations()}
	b.mu.Unlock()
	b.downloads = make(chan struct{}, b.parallel())
	b.hashes = syncx.NewSlots(b.hashParallel())
	b.meta = make(chan struct{}, b.metaParallel())
	b.ahead = b.aheadDests()
	var g errgroup.Group
	g.SetLimit(b.metaParallel())
	for _, r := range plan.releases {
		g.Go(func() error {
			b.buildRelease(ctx, r)
			return nil
		})
	}
	_ = g.Wait()
	b.report.sort()
	return b.report
}

// Build plans and executes. A plan that fails is reported in
// Report.Errors, with nothing published.
func (b *Builder) Build(ctx context.Context, reqs []Requirement) *Report {
	plan, err := b.Plan(ctx, reqs)
	if err != nil {
		return &Report{Errors: []error{err}}
	}
	return b.Execute(ctx, plan)
}

func (b *Builder) hashParallel() int {
	if b.Options.HashParallel > 0 {
		return b.Options.HashParallel
	}
	return runtime.GOMAXPROCS(0)
}

// slot takes a place in a semaphore, or fails when ctx ends first; call
// the returned function to give it back.
func slot(ctx context.Context, sem chan struct{}) (func(), error) {
	select {
	case sem <- struct{}{}:
		return func() { <-sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// metaParallel bounds metadata requests (version lists, download
// documents, checksums): tiny, so bound by latency, not bandwidth.
func (b *Builder) metaParallel() int { return 4 * b.parallel() }

func (b *Builder) parallel() int {
	if b.Options.Parallel > 0 {
		return b.Options.Parallel
	}
	return DefaultParallel
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
				r.unpublished = slices.Clone(r.unpublished)
				all = append(all, r)
				continue
			}
			for _, plat := range r.req.Platforms {
				if !slices.Contains(all[i].req.Platforms, plat) {
					all[i].req.Platforms = append(all[i].req.Platforms, plat)
					if slices.Contains(r.unpublished, plat) {
						all[i].unpublished = append(all[i].unpublished, plat)
						all[i].listed = r.listed
					}
				}
			}
		}
	}
	return all
}

func (b *Builder) resolve(ctx context.Context, req Requirement) ([]release, error) {
	if err := CheckProvider(req.Provider); err != nil {
		return nil, &ResolveError{Provider: req.Provider, Input: true, Err: err}
	}
	listed, err := b.listReleases(ctx, req.Provider)
	if err != nil {
		return nil, &ResolveError{Provider: req.Provider, Input: errors.Is(err, ErrProviderUnknown), Err: fmt.Errorf("list versions: %w", err)}
	}
	available := make(addrs.VersionList, len(listed))
	for i, r := range listed {
		available[i] = r.Version
	}
	old, held := b.Options.Cooldown.filter(req.Provider.String(), slices.Clone(available).Filter(req.Allowed), req.MinAge)
	for _, h := range held {
		b.warn("%s", h)
	}
	versions := req.selectVersions(old)
	if len(versions) == 0 && len(held) > 0 {
		return nil, nil // everything that matches is too young yet
	}
	if len(versions) == 0 {
		return nil, &ResolveError{Provider: req.Provider, Input: true, Err: noMatchError(req, available)}
	}
	platforms := make(map[string][]addrs.Platform, len(listed))
	for _, r := range listed {
		if len(r.Platforms) > 0 {
			platforms[r.Version.String()] = r.Platforms
		}
	}
	out := make([]release, len(versions))
	for i, v := range versions {
		out[i] = release{req: req, version: v}
		out[i].checkListed(platforms[v.String()])
	}
	return out, nil
}

func noMatchError(req Requirement, available addrs.VersionList) error {
	if len(available) == 0 {
		return fmt.Errorf("the origin lists no versions")
	}
	newest := slices.Clone(available).Newest()
	return fmt.Errorf("no released version matches %q (newest available: %s)", req.Constraints, newest)
}

func (b *Builder) emit(r Result) {
	r.Status = canceled(r.Status, r.Err)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.report.Results = append(b.report.Results, r)
	b.done.Add(1)
	if b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Result: &r})
	}
}

func (b *Builder) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.warned[msg] { // each package of a release may say the same
		return
	}
	if b.warned == nil {
		b.warned = map[string]bool{}
	}
	b.warned[msg] = true
	if b.report == nil { // planning: the report starts with them
		b.planWarnings = append(b.planWarnings, msg)
	} else {
		b.report.Warnings = append(b.report.Warnings, msg)
	}
	if b.Options.OnEvent != nil {
		b.Options.OnEvent(Event{Warning: msg})
	}
}

// Package prune is the prune use case: it removes from a mirror tree the
// versions the manifest no longer selects, safely.
//
// It owns the prune plan and its safety rules: which versions to unlist
// (those index.json lists that no requirement selects any more, selected
// against the versions the mirror holds, never the origin's, so it works
// offline and a newer release upstream never empties a mirror); which
// versions' files to delete (those no index.json lists and no
// requirement selects, once index.json has not changed for the grace
// period); the cap on how many versions one
// run may remove; and the order of the writes, the reverse of the publish
// order (catalog.json, then index.json, then each version's <version>.json,
// provenance, SHA256SUMS and signature, and its archives last), made under
// the store's exclusive lock so that a prune never races a publication.
//
// It does not know the tree's file formats or where files go beyond
// layout's path helpers (package layout does), select versions itself
// (mirror.Requirement.Select does, with the build's rule), read manifests
// or configurations (the prune command gathers the requirements), know
// any particular store (it writes through layout.Store, which the command
// opens), refresh the views derived from the tree (the command's Refresh
// does, under the same lock) or print: it returns a Report.
package prune

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Defaults of Options.Grace and Options.MaxDeletions.
const (
	// DefaultGrace is long enough for clients and CDNs to drop an
	// index.json they cached while it still listed a pruned version.
	DefaultGrace = 24 * time.Hour
	// DefaultMaxDeletions is the most versions a run removes unless
	// told otherwise.
	DefaultMaxDeletions = 50
)

// Options say what a prune keeps and how far it may go.
type Options struct {
	// Requirements are what the manifest selects (app.ReadInputs).
	// A version of the mirror that none of them selects is pruned.
	Requirements []mirror.Requirement
	// Grace is how long a version's files stay once index.json no longer
	// lists it, counted from index.json's last change; 0 deletes them in
	// the run that unlists it.
	Grace time.Duration
	// MaxDeletions caps the versions one run unlists or deletes (each
	// counted once): a run that would remove more is refused whole.
	MaxDeletions int
	// LockTimeout is how long to wait for the store's exclusive lock,
	// that is for other writers (builds publishing) to finish.
	LockTimeout time.Duration
	// DryRun plans without taking the lock or writing anything.
	DryRun bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Refresh, if set, runs under the exclusive lock once a prune wrote
	// anything: the views derived from the tree (the catalog page, the
	// registry replica) are brought in step before another writer can
	// change it.
	Refresh func(ctx context.Context, tree *layout.Tree) error
	// Record, if set, runs under the same lock before Refresh once a
	// prune unlisted or deleted versions: the tree's change record.
	Record func(ctx context.Context, tree *layout.Tree, report *Report) error
}

// Version names one version of one provider.
type Version struct {
	Provider addrs.Provider
	Version  addrs.Version
}

func (v Version) String() string { return v.Provider.String() + " " + v.Version.String() }

// Waiting is a version no index.json lists whose files stay until the
// grace period is over.
type Waiting struct {
	Version
	// Until is when a prune may delete its files; zero when the store
	// does not say when index.json last changed (then only a prune with
	// a grace of 0 deletes them).
	Until time.Time
}

// LeftAlone is a file prune found in a provider's directory and does not
// touch: it is none of the files tfmirror names for a version.
type LeftAlone struct {
	Path   string
	Reason string
}

// Report says what a prune did, or, in a dry run, what it would do.
type Report struct {
	Location string
	DryRun   bool
	// Unlisted are the versions removed from index.json.
	Unlisted []Version
	// Deleted are the versions whose files were deleted.
	Deleted []Version
	// Files are the files deleted, in the order they were.
	Files []string
	// Waiting are the versions not listed any more whose files wait for
	// the grace period.
	Waiting []Waiting
	// Kept are versions no index.json lists whose files stay because the
	// manifest selects them: a build lists them again.
	Kept      []Version
	LeftAlone []LeftAlone
	Warnings  []string
}

// LimitError refuses a prune that would remove more versions than
// Options.MaxDeletions. Nothing was written.
type LimitError struct {
	Location string
	Max      int
	// Versions are every version the run would unlist or delete.
	Versions       []Version
	Unlist, Delete int
	DryRun         bool
}

// limitListed is how many of a LimitError's versions its message names.
const limitListed = 10

func (e *LimitError) Error() string {
	var b strings.Builder
	verb := "refused"
	if e.DryRun {
		verb = "would be refused"
	}
	fmt.Fprintf(&b, "prune of %s %s: it would remove %s (unlist %d, delete the files of %d), more than --max-deletions allows (%d); nothing was written. "+
		"Check that the manifest still selects what the mirror should keep, or raise --max-deletions to allow it:",
		e.Location, verb, plural.Count(len(e.Versions), "version"), e.Unlist, e.Delete, e.Max)
	for i, v := range e.Versions {
		if i == limitListed {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Versions)-limitListed)
			break
		}
		fmt.Fprintf(&b, "\n  %s", v)
	}
	return b.String()
}

// Run plans the prune of the tree kept in store and, unless opts.DryRun,
// carries it out: it takes the store's exclusive lock (waiting up to
// opts.LockTimeout for the writers publishing into it), plans again from
// what the store then holds, and writes in reverse publish order. A run
// with nothing to do takes no lock and writes nothing.
//
// The report says what was done (in a dry run, what would be); on an
// error part of it may have been done, and the report says which part.
// A run over the cap returns a *LimitError, having written nothing.
func Run(ctx context.Context, store layout.Store, opts Options) (*Report, error) {
	if opts.Grace < 0 {
		return nil, fmt.Errorf("the grace period must not be negative (got %s)", opts.Grace)
	}
	if opts.MaxDeletions < 0 {
		return nil, fmt.Errorf("the maximum number of deletions must not be negative (got %d)", opts.MaxDeletions)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	tree := layout.NewTree(store)
	pl := &planner{tree: tree, reqs: map[string][]mirror.Requirement{}, grace: opts.Grace}
	for _, r := range opts.Requirements {
		pl.reqs[r.Provider.String()] = append(pl.reqs[r.Provider.String()], r)
	}
	p, err := pl.plan(ctx, now())
	if err != nil {
		return nil, fmt.Errorf("prune %s: nothing was written: %w", tree.Location(), err)
	}
	if err := p.checkLimit(opts.MaxDeletions, opts.DryRun); err != nil {
		return p.refused(), err
	}
	if opts.DryRun || p.empty() {
		report := p.report(true)
		report.DryRun = opts.DryRun
		return report, nil
	}
	unlock, err := store.Lock(ctx, opts.LockTimeout, layout.Exclusive)
	if err != nil {
		return p.refused(), fmt.Errorf("prune %s: nothing was written: %w", tree.Location(), err)
	}
	report, err := pl.applyLocked(ctx, opts.MaxDeletions, now)
	if report != nil && len(report.Unlisted)+len(report.Deleted) > 0 && opts.Record != nil {
		err = errors.Join(err, opts.Record(ctx, tree, report))
	}
	if err == nil && opts.Refresh != nil {
		err = opts.Refresh(ctx, tree)
	}
	if uerr := unlock(); uerr != nil {
		err = errors.Join(err, fmt.Errorf("prune %s: release the lock: %w", tree.Location(), uerr))
	}
	return report, err
}

// applyLocked plans again, now that no other writer can change the tree,
// and writes the plan.
func (pl *planner) applyLocked(ctx context.Context, maxDeletions int, now func() time.Time) (*Report, error) {
	p, err := pl.plan(ctx, now())
	if err != nil {
		return nil, fmt.Errorf("prune %s: nothing was written: %w", pl.tree.Location(), err)
	}
	if err := p.checkLimit(maxDeletions, false); err != nil {
		return p.refused(), err
	}
	report := p.report(false)
	return report, p.apply(ctx, pl.tree, report)
}

// plan is what one prune does to a tree.
type plan struct {
	location  string
	catalog   []byte // the new catalog.json; nil when it stays
	dropped   []addrs.Provider
	providers []*providerPlan
	warnings  []string
}

// providerPlan is what a prune does to one provider.
type providerPlan struct {
	provider  addrs.Provider
	listed    addrs.VersionList // what index.json lists now
	index     []byte            // the new index.json; nil when it stays
	unlist    addrs.VersionList
	remaining int // versions index.json lists after the prune
	del       []heldVersion
	// deleteIndex deletes index.json after the files: the provider has
	// no version left, listed or not.
	deleteIndex bool
	waiting     []Waiting
	kept        addrs.VersionList
	leftAlone   []LeftAlone
}

func (p *plan) empty() bool {
	if p.catalog != nil {
		return false
	}
	for _, pp := range p.providers {
		if pp.index != nil || pp.deleteIndex || len(pp.del) > 0 {
			return false
		}
	}
	return true
}

// removed lists the versions the plan unlists or deletes, each once.
func (p *plan) removed() (all []Version, unlist, del int) {
	for _, pp := range p.providers {
		seen := map[string]bool{}
		add := func(v addrs.Version) {
			if !seen[v.String()] {
				seen[v.String()] = true
				all = append(all, Version{pp.provider, v})
			}
		}
		for _, v := range pp.unlist {
			add(v)
		}
		for _, h := range pp.del {
			add(h.version)
		}
		unlist += len(pp.unlist)
		del += len(pp.del)
	}
	return all, unlist, del
}

func (p *plan) checkLimit(maxDeletions int, dryRun bool) error {
	all, unlist, del := p.removed()
	if len(all) <= maxDeletions {
		return nil
	}
	return &LimitError{Location: p.location, Max: maxDeletions, Versions: all, Unlist: unlist, Delete: del, DryRun: dryRun}
}

// refused is the report of a run that did not go ahead (refused by the
// cap, locked out): nothing was done.
func (p *plan) refused() *Report {
	return &Report{Location: p.location, Warnings: p.warnings}
}

// report describes the plan: as done when planned is true (a dry run, a
// run with nothing to do), else only what is not a write (waiting, kept,
// left alone, warnings), for apply to fill in as it writes.
func (p *plan) report(planned bool) *Report {
	r := &Report{Location: p.location, Warnings: p.warnings}
	for _, pp := range p.providers {
		r.Waiting = append(r.Waiting, pp.waiting...)
		for _, v := range pp.kept {
			r.Kept = append(r.Kept, Version{pp.provider, v})
		}
		r.LeftAlone = append(r.LeftAlone, pp.leftAlone...)
	}
	if !planned {
		return r
	}
	for _, pp := range p.providers {
		for _, v := range pp.unlist {
			r.Unlisted = append(r.Unlisted, Version{pp.provider, v})
		}
		for _, h := range pp.del {
			r.Deleted = append(r.Deleted, Version{pp.provider, h.version})
			r.Files = append(r.Files, h.files()...)
		}
	}
	for _, pp := range p.providers {
		if pp.deleteIndex {
			r.Files = append(r.Files, layout.IndexPath(pp.provider))
		}
	}
	return r
}

// apply writes the plan in reverse publish order, recording in r what it
// did: catalog.json first, then every index.json, then each deleted
// version's files (<version>.json, provenance, SHA256SUMS, signature,
// archives), then the index.json of providers left with nothing.
func (p *plan) apply(ctx context.Context, tree *layout.Tree, r *Report) error {
	fail := func(what string, err error) error {
		return fmt.Errorf("prune %s: %s: %w", p.location, what, err)
	}
	if !p.empty() {
		// A signature of catalog.json no longer vouches for what the
		// tree holds: it goes first; the refresh after the prune signs
		// again.
		if err := tree.Unsign(ctx); err != nil {
			return fail("unsign "+layout.CatalogPath, err)
		}
	}
	if p.catalog != nil {
		if err := tree.Put(ctx, layout.CatalogPath, p.catalog); err != nil {
			return fail("write "+layout.CatalogPath+" (dropping "+providerNames(p.dropped)+")", err)
		}
	}
	for _, pp := range p.providers {
		if pp.index == nil {
			continue
		}
		if err := tree.Put(ctx, layout.IndexPath(pp.provider), pp.index); err != nil {
			return fail(fmt.Sprintf("%s: write %s (unlisting %s)", pp.provider, layout.IndexPath(pp.provider), versionNames(pp.unlist)), err)
		}
		for _, v := range pp.unlist {
			r.Unlisted = append(r.Unlisted, Version{pp.provider, v})
		}
	}
	for _, pp := range p.providers {
		for _, h := range pp.del {
			for _, rel := range h.files() {
				if err := ctx.Err(); err != nil {
					return fail(fmt.Sprintf("%s %s", pp.provider, h.version), err)
				}
				if err := tree.Delete(ctx, rel); err != nil {
					return fail(fmt.Sprintf("%s %s: delete %s", pp.provider, h.version, rel), err)
				}
				r.Files = append(r.Files, rel)
			}
			r.Deleted = append(r.Deleted, Version{pp.provider, h.version})
		}
	}
	for _, pp := range p.providers {
		if !pp.deleteIndex {
			continue
		}
		rel := layout.IndexPath(pp.provider)
		if err := tree.Delete(ctx, rel); err != nil {
			return fail(fmt.Sprintf("%s: delete %s", pp.provider, rel), err)
		}
		r.Files = append(r.Files, rel)
	}
	return nil
}

func providerNames(ps []addrs.Provider) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return strings.Join(names, ", ")
}

func versionNames(vs addrs.VersionList) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.String()
	}
	return strings.Join(names, ", ")
}

// Package audit is the audit command: the known vulnerabilities of every
// package a mirror already built holds (a directory, an http(s):// mirror,
// a bucket, an OCI registry or image layout), read from the SBOMs it
// publishes beside them, against a vulnerability database (often newer
// than the one the build had). It downloads no archive: per version it
// reads what clients are told (the listing), then the provenance record
// that names each package's SBOM and the SBOMs (app.MatchSBOMs, which a
// build with a database uses for the packages it keeps). Versions are
// read versionWorkers at once and reported in the mirror's order
// (providers sorted, versions as listed, platforms sorted), with at most
// versionWindow versions' outcomes waiting, so its memory does not grow
// with the packages.
//
// It does not read SBOMs or match them (app.MatchSBOMs does, with
// packages sbom and vulndb), or print: it reports each package through
// Options.Package and returns the counts.
package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/vulndb"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Options say what to audit.
type Options struct {
	// Mirror is the location of the mirror.
	Mirror  string
	Flags   settings.Flags
	Process settings.Process
	// Package, if set, is called with each package audited, in order.
	Package func(Package)
}

// Status is what the audit found of one package.
type Status = app.SBOMStatus

// Package outcomes.
const (
	StatusClean      = app.SBOMClean      // no known vulnerability
	StatusVulnerable = app.SBOMVulnerable // known vulnerabilities
	StatusNoSBOM     = app.SBOMNone       // published without an SBOM
	StatusNoBuild    = app.SBOMNoBuild    // not a Go program
	StatusBadSBOM    = app.SBOMBad        // its SBOM is missing or not its own
)

// Package is one package's outcome.
type Package struct {
	mirror.Package
	Status     Status
	Advisories []mirror.Advisory
	// Acted are the advisories the policy acts on (all of them without
	// a vulnerabilities policy).
	Acted []mirror.Advisory
	// Problem says what is wrong with a bad SBOM.
	Problem string
}

// Report counts what the audit found.
type Report struct {
	Location string // the mirror, without credentials
	Database string // the database, without credentials
	Packages int
	Counts   map[Status]int
	// Acted counts the packages with advisories the policy acts on.
	Acted int
	// Advisories counts the distinct advisories found.
	Advisories int
	// Warnings are versions that could not be read.
	Warnings []string

	ids map[string]bool
}

// ActedError means the audit found advisories the policy acts on: exit 1.
type ActedError struct{ Packages int }

func (e *ActedError) Error() string {
	if e.Packages == 1 {
		return "1 package has known vulnerabilities the policy does not allow"
	}
	return fmt.Sprintf("%d packages have known vulnerabilities the policy does not allow", e.Packages)
}

// Bounds on the versions read at once and waiting to be reported: for a
// bucket or a URL each version is a few requests whose latency would
// otherwise add up; on a directory, enough to keep every core busy.
const (
	versionWorkers = 16
	versionWindow  = 4 * versionWorkers
)

// auditor is one run.
type auditor struct {
	opts   Options
	mirror endpoint.Mirror
	db     vulndb.Matcher
	policy *mirror.AdvisoryPolicy
	report *Report
}

// Run audits the mirror. An SBOM that fails its check makes the error an
// *app.ProblemsError (exit 3); advisories the policy acts on, an
// *ActedError (exit 1).
func Run(ctx context.Context, opts Options) (*Report, error) {
	ref, m, s, err := app.Locate(opts.Mirror, opts.Flags, opts.Process)
	if err != nil {
		return nil, err
	}
	if s.VulnDB == "" {
		return nil, inputerr.Wrap(errors.New("audit needs a vulnerability database: --vulndb DIR|FILE.zip|https://URL, or the manifest's vulndb"))
	}
	db, err := endpoint.OpenVulnDB(ctx, s.VulnDB, s)
	if err != nil {
		return nil, err
	}
	mir, err := endpoint.OpenMirror(ctx, ref, s)
	if err != nil {
		return nil, err
	}
	providers, err := listProviders(ctx, ref, mir, m)
	if err != nil {
		return nil, err
	}
	a := &auditor{opts: opts, mirror: mir, db: db, policy: s.Advisories,
		report: &Report{Location: mir.Location(), Database: db.Location(), Counts: map[Status]int{}, ids: map[string]bool{}}}
	if err := a.run(ctx, providers); err != nil {
		return a.report, err
	}
	a.report.Advisories = len(a.report.ids)
	return a.report, a.report.err()
}

func (r *Report) err() error {
	var errs []error
	if n := r.Counts[StatusBadSBOM]; n > 0 {
		errs = append(errs, &app.ProblemsError{Problems: n})
	}
	if r.Acted > 0 {
		errs = append(errs, &ActedError{Packages: r.Acted})
	}
	return errors.Join(errs...)
}

// listProviders are the providers to audit: those a tree lists, or those
// the manifest names for a registry, which cannot list its repositories.
func listProviders(ctx context.Context, ref endpoint.Ref, mir endpoint.Mirror, m *config.Manifest) ([]addrs.Provider, error) {
	if ref.Kind == endpoint.OCI || ref.Kind == endpoint.OCILayout {
		providers := app.ManifestProviders(m)
		if len(providers) == 0 {
			return nil, inputerr.Wrap(fmt.Errorf("%s: a registry cannot be asked which repositories it holds; name the providers to audit with the provider blocks of a manifest (--config)", ref))
		}
		return providers, nil
	}
	lister, ok := mir.(interface {
		Providers(ctx context.Context) ([]addrs.Provider, error)
	})
	if !ok {
		return nil, fmt.Errorf("%s cannot be asked which providers it holds", mir.Location())
	}
	providers, err := lister.Providers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the providers of %s: %w", mir.Location(), err)
	}
	if tree, ok := mir.(*layout.Tree); ok && len(providers) == 0 {
		if err := endpoint.RequireMirror(ctx, ref, tree); err != nil {
			return nil, err
		}
	}
	return providers, nil
}

// job is one version being audited; done is closed once its outcome
// (out, warning, err) is there.
type job struct {
	p       addrs.Provider
	v       addrs.Version
	out     []Package
	warning string
	err     error
	done    chan struct{}
}

// run audits every version of the providers, versionWorkers at once,
// and adds the outcomes in order: the producer queues each version as it
// starts it, the queue holding at most versionWindow; the first error
// stops the run.
func (a *auditor) run(ctx context.Context, providers []addrs.Provider) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan *job, versionWindow)
	var listErr error
	go func() {
		defer close(queue)
		listErr = a.produce(ctx, providers, queue)
	}()
	var err error
	for j := range queue {
		<-j.done
		if err == nil && j.err != nil {
			err = j.err
			cancel() // the rest only drains
		}
		if err == nil {
			a.add(j)
		}
	}
	return cmp.Or(err, listErr)
}

// produce lists each provider's versions and starts auditing each,
// queued in order.
func (a *auditor) produce(ctx context.Context, providers []addrs.Provider, queue chan<- *job) error {
	workers := make(chan struct{}, versionWorkers)
	for _, p := range providers {
		versions, _, err := a.mirror.ListVersions(ctx, p)
		if err != nil {
			return fmt.Errorf("list the versions of %s: %w", p, err)
		}
		for _, v := range versions {
			j := &job{p: p, v: v, done: make(chan struct{})}
			select {
			case queue <- j:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case workers <- struct{}{}:
			case <-ctx.Done():
				j.err = ctx.Err()
				close(j.done)
				return ctx.Err()
			}
			go func() {
				defer func() { <-workers }()
				defer close(j.done)
				j.out, j.warning, j.err = a.version(ctx, j.p, j.v)
			}()
		}
	}
	return nil
}

// version audits one version's packages, as its listing names them, in
// the order of their platforms.
func (a *auditor) version(ctx context.Context, p addrs.Provider, v addrs.Version) ([]Package, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	l := a.mirror.ListVersion(ctx, p, v)
	if l.Packages == nil {
		return nil, fmt.Sprintf("%s %s: the listing cannot be read (tfmirror verify says why)", p, v), nil
	}
	plats := slices.SortedFunc(maps.Keys(l.Packages), func(x, y addrs.Platform) int { return strings.Compare(x.String(), y.String()) })
	found, err := app.MatchSBOMs(ctx, a.mirror, a.db, p, v, plats)
	if err != nil {
		return nil, "", err
	}
	out := make([]Package, len(found))
	for i, f := range found {
		out[i] = Package{Package: mirror.Package{Provider: p, Version: v, Platform: f.Platform}, Status: f.Status, Advisories: f.Advisories, Problem: f.Problem}
		if len(f.Advisories) > 0 {
			out[i].Acted = a.acted(p, f.Advisories)
		}
	}
	return out, "", nil
}

// acted are the advisories the policy acts on: every one without a
// vulnerabilities policy; with one, those it does not ignore where it
// holds back or refuses.
func (a *auditor) acted(p addrs.Provider, advs []mirror.Advisory) []mirror.Advisory {
	if a.policy == nil {
		return advs
	}
	pol := a.policy.For(p)
	if !pol.Gates() {
		return nil
	}
	return pol.Acted(advs)
}

// add counts and reports a version's outcome.
func (a *auditor) add(j *job) {
	r := a.report
	if j.warning != "" {
		r.Warnings = append(r.Warnings, j.warning)
	}
	for _, out := range j.out {
		r.Packages++
		r.Counts[out.Status]++
		if len(out.Acted) > 0 {
			r.Acted++
		}
		for _, adv := range out.Advisories {
			r.ids[adv.ID] = true
		}
		if a.opts.Package != nil {
			a.opts.Package(out)
		}
	}
}

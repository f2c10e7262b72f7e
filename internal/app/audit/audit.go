// Package audit is the audit command: the known vulnerabilities of every
// package a mirror already built holds (a directory, an http(s):// mirror,
// a bucket, an OCI registry or image layout), read from the SBOMs it
// publishes beside them, against a vulnerability database (often newer
// than the one the build had). It downloads no archive: per version it
// reads what clients are told (the listing), the provenance record that
// names each package's SBOM, and the SBOMs, one package at a time, so its
// memory does not grow with the mirror.
//
// It does not match (package vulndb does), check an SBOM (package sbom)
// or print: it reports each package through Options.Package and returns
// the counts.
package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/sbom"
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
type Status string

// Package outcomes.
const (
	StatusClean      Status = "clean"                // no known vulnerability
	StatusVulnerable Status = "vulnerable"           // known vulnerabilities
	StatusNoSBOM     Status = "no_sbom"              // published without an SBOM
	StatusNoBuild    Status = "no_build_information" // not a Go program
	StatusBadSBOM    Status = "bad_sbom"             // its SBOM is missing or not its own
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
	return fmt.Sprintf("%d packages have known vulnerabilities the policy does not allow", e.Packages)
}

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
	for _, p := range providers {
		if err := a.provider(ctx, p); err != nil {
			return a.report, err
		}
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
	return providers, nil
}

func (a *auditor) provider(ctx context.Context, p addrs.Provider) error {
	versions, _, err := a.mirror.ListVersions(ctx, p)
	if err != nil {
		return fmt.Errorf("list the versions of %s: %w", p, err)
	}
	for _, v := range versions {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := a.version(ctx, p, v); err != nil {
			return err
		}
	}
	return nil
}

// version audits one version's packages, as its listing names them.
func (a *auditor) version(ctx context.Context, p addrs.Provider, v addrs.Version) error {
	l := a.mirror.ListVersion(ctx, p, v)
	if l.Packages == nil {
		a.report.Warnings = append(a.report.Warnings, fmt.Sprintf("%s %s: the listing cannot be read (tfmirror verify says why)", p, v))
		return nil
	}
	rec, err := a.mirror.ReadRecord(ctx, p, v)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the provenance of %s %s: %w", p, v, err)
	}
	for _, plat := range slices.SortedFunc(maps.Keys(l.Packages), func(x, y addrs.Platform) int { return strings.Compare(x.String(), y.String()) }) {
		pkg := mirror.Package{Provider: p, Version: v, Platform: plat}
		out, err := a.audit(ctx, pkg, rec.Provenance.Archives[plat.String()])
		if err != nil {
			return err
		}
		a.add(out)
	}
	return nil
}

// audit reads one package's SBOM and matches it.
func (a *auditor) audit(ctx context.Context, pkg mirror.Package, entry layout.ProvenanceArchive) (Package, error) {
	out := Package{Package: pkg, Status: StatusNoSBOM}
	if entry.SBOM == "" {
		return out, nil
	}
	data, err := a.mirror.ReadSBOM(ctx, pkg.Provider, pkg.Version, pkg.Platform)
	if err == nil {
		err = sbom.Check(pkg, entry, data)
	}
	if err != nil {
		out.Status, out.Problem = StatusBadSBOM, fmt.Sprintf("the SBOM %s: %v", entry.SBOM, err)
		return out, nil
	}
	c, err := sbom.Decode(data)
	switch {
	case err != nil:
		out.Status, out.Problem = StatusBadSBOM, err.Error()
		return out, nil
	case !c.HasBuild:
		out.Status = StatusNoBuild
		return out, nil
	}
	findings, err := a.db.Match(ctx, program(c, pkg.Platform))
	if err != nil {
		return out, err
	}
	out.Status, out.Advisories = StatusClean, app.Advisories(findings)
	if len(out.Advisories) > 0 {
		out.Status, out.Acted = StatusVulnerable, a.acted(pkg.Provider, out.Advisories)
	}
	return out, nil
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

func (a *auditor) add(out Package) {
	r := a.report
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

// program is what the SBOM says the package was built from, as the build
// matches it: the dependencies (not the main module), the Go version, the
// package's platform.
func program(c sbom.Contents, plat addrs.Platform) vulndb.Program {
	p := vulndb.Program{GoVersion: c.GoVersion, GOOS: plat.OS, GOARCH: plat.Arch}
	for _, m := range c.Modules {
		if !m.Main {
			p.Modules = append(p.Modules, vulndb.Module{Path: m.Path, Version: m.Version})
		}
	}
	return p
}

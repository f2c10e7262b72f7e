// Package build is the build command: it gathers what to mirror (the
// manifest's requirements and those of every configuration root), opens
// the destinations through endpoint, plans, publishes every package from
// one download into each destination, then writes what the build was
// asked for besides the mirror: the filesystem views, the tree's derived
// views (views.Refresh) and the lock files.
//
// It does not select, fetch or verify anything itself (package mirror
// does), know the tree's files (package layout does), open a location
// itself (package endpoint does) or print: it reports through Events and
// returns a Report.
package build

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Options say what to build and where.
type Options struct {
	// Dirs are configuration roots named on the command line, besides the
	// manifest's configuration blocks.
	Dirs []string
	// Platforms are the platforms of the configurations' providers; empty
	// means the manifest's.
	Platforms []string
	// Out are the destinations; none means the manifest's out list, else
	// ./site.
	Out []string
	// Layout is what directories hold: network (default), packed or
	// unpacked.
	Layout string
	// From, if set, is a mirror already built to take the packages from
	// instead of the origin registries.
	From string
	// Shard, if set, is "K/N": build only part K of N of the plan.
	Shard string

	Strict           bool
	VerifyExisting   bool
	DryRun           bool
	RegistryReplica  bool
	WriteLockFiles   bool
	OverwriteOCITags bool
	// Recheck is the share of the releases and module versions already
	// mirrored whose evidence is fetched again and compared ("N%"); ""
	// rechecks none.
	Recheck            string
	OCIModuleLocations bool
	// NoModules mirrors providers only: the manifest's module blocks and
	// the configurations' module calls are left out.
	NoModules bool
	// NoSBOM publishes no SBOM beside the packages the build verifies
	// (those already published keep theirs).
	NoSBOM bool
	// Vars are the --var and --var-file flags, in their order: values of
	// the configurations' variables.
	Vars []tfconfig.VarArg
	// NoTests leaves out what only the configurations' test files need.
	NoTests bool

	Flags   settings.Flags
	Process settings.Process
	Events  Events
}

// DefaultParallel is the default number of concurrent downloads.
const DefaultParallel = mirror.DefaultParallel

// Progress is a snapshot of a running build.
type Progress = mirror.Progress

// Events are how a build reports while it runs; every one may be nil.
type Events struct {
	Line    func(string)                                        // a message for people
	Warning func(string)                                        // something the run works around
	Package func(mirror.Event)                                  // a package finished, a warning
	Module  func(mirror.ModuleResult)                           // a module version finished
	Started func(packages int, progress func() mirror.Progress) // execution starts
}

func (e Events) line(s string) {
	if e.Line != nil {
		e.Line(s)
	}
}

func (e Events) warn(s string) {
	if e.Warning != nil {
		e.Warning(s)
	}
}

// Report is what a build did; Build is nil when it stopped before
// planning ended.
type Report struct {
	Build  *mirror.Report
	DryRun bool
	// Destinations name where the mirror went, in order.
	Destinations []string
	// Downloaded counts the archive bytes downloaded.
	Downloaded int64
	LockFiles  []app.LockFile
	// VulnDB names the vulnerability database the packages were matched
	// against; "" when none was given.
	VulnDB string
}

// Run builds. The report is set whenever the build was planned.
func Run(ctx context.Context, opts Options) (*Report, error) {
	b, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	return b.run(ctx)
}

// run is a prepared build: its inputs, its destinations and its core.
type run struct {
	opts    Options
	s       settings.Settings
	in      app.Inputs
	outs    outputs
	kind    layout.Kind
	builder *mirror.Builder
	modules *modules
	recheck mirror.Recheck
	vulnDB  *app.VulnDB // the vulnerability database; nil for none
	notes   []string    // said before the build plans
	// started is the build's one clock value: the time of its change
	// record and of its recheck run.
	started time.Time
}

// prepare reads the manifest, the configurations and the flags and opens
// everything a build needs, writing nothing.
func prepare(ctx context.Context, opts Options) (*run, error) {
	if opts.Flags.Parallel < 1 {
		return nil, inputerr.Wrap(errors.New("--parallel must be at least 1"))
	}
	shard, err := parseShard(opts)
	if err != nil {
		return nil, err
	}
	recheck, err := parseRecheck(opts.Recheck)
	if err != nil {
		return nil, err
	}
	kind, err := layout.ParseKind(opts.Layout)
	if err != nil {
		return nil, inputerr.Wrap(err)
	}
	m, s, in, err := app.LoadInputs(opts.Flags, opts.Process, opts.Dirs, opts.Platforms, app.Reading{NoModules: opts.NoModules, Vars: opts.Vars, NoTests: opts.NoTests})
	if err != nil {
		return nil, err
	}
	started := now(s)
	recheck.Run = mirror.RunOf(started)
	r := &run{opts: opts, s: s, in: in, kind: kind, recheck: recheck, started: started}
	if err := r.checkInputs(); err != nil {
		return nil, err
	}
	out := opts.Out
	if len(out) == 0 {
		out = m.Outs
	}
	if len(out) == 0 {
		out = []string{"site"}
	}
	if r.outs, err = openOutputs(ctx, out, kind, opts.OverwriteOCITags, s); err != nil {
		return nil, err
	}
	if err := r.checkOutputs(ctx); err != nil {
		return nil, err
	}
	if _, err := r.moduleLocator(); err != nil {
		return nil, err
	}
	source, err := r.source(ctx)
	if err != nil {
		return nil, err
	}
	if r.notes, err = readUpstreamCatalogs(ctx, source, s.CatalogKeys); err != nil {
		return nil, err
	}
	if len(r.outs.registries()) > 0 {
		// Shards that pushed platforms of one version into a registry
		// would race on its tag.
		shard.ByVersion = true
	}
	cooldown, err := r.openCooldown(ctx)
	if err != nil {
		return nil, err
	}
	vulnDB, err := app.OpenVulnDB(ctx, s)
	if err != nil {
		return nil, err
	}
	r.vulnDB = vulnDB
	describe := mirror.Describer(sbom.Describe)
	if opts.NoSBOM {
		describe = nil
	}
	r.builder = &mirror.Builder{Source: source, Checker: signing.Checker{}, Dests: r.outs.dests(), Options: mirror.Options{
		Strict: opts.Strict, Trust: s.Trust, Parallel: opts.Flags.Parallel, ZipLimits: s.ZipLimits,
		VerifyExisting: opts.VerifyExisting, Shard: shard, Cooldown: cooldown, OnEvent: opts.Events.Package,
		Describe: describe, Advise: vulnDB.Advisor(), AdviseKept: vulnDB.KeptAdvisor(r.outs.packages()), Advisories: app.AdvisoryPolicy(s), Recheck: recheck,
	}}
	if r.modules, err = r.openModules(cooldown); err != nil {
		return nil, err
	}
	return r, nil
}

// parseRecheck reads --recheck: "" for none, else "N%".
func parseRecheck(s string) (mirror.Recheck, error) {
	if s == "" {
		return mirror.Recheck{}, nil
	}
	rc, err := mirror.ParseRecheck(s)
	if err != nil {
		return rc, inputerr.Wrap(fmt.Errorf("--recheck: %w", err))
	}
	return rc, nil
}

// now is the settings' clock.
func now(s settings.Settings) time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func parseShard(opts Options) (mirror.Shard, error) {
	if opts.Shard == "" {
		return mirror.Shard{}, nil
	}
	shard, err := mirror.ParseShard(opts.Shard)
	if err != nil {
		return shard, inputerr.Wrap(fmt.Errorf("--shard: %w", err))
	}
	switch {
	case opts.WriteLockFiles:
		return shard, inputerr.Wrap(errors.New("--write-lock-files needs the whole mirror, which one shard does not build: run \"tfmirror lock\" once every shard has finished"))
	case opts.RegistryReplica:
		return shard, inputerr.Wrap(errors.New("--registry-replica needs the whole mirror, which one shard does not build: run \"tfmirror replica\" once every shard has finished"))
	}
	return shard, nil
}

// checkInputs refuses what the build cannot do with its inputs.
func (r *run) checkInputs() error {
	switch {
	case r.opts.WriteLockFiles && len(r.in.Configurations) == 0:
		return inputerr.Wrap(errors.New("--write-lock-files needs configurations: name their directories or add configuration blocks"))
	case r.opts.OCIModuleLocations && len(r.in.Modules) == 0:
		return inputerr.Wrap(errors.New("--oci-module-locations needs modules to mirror"))
	case r.opts.RegistryReplica && r.kind != layout.Network:
		return inputerr.Wrap(errors.New("--registry-replica needs --layout network: the replica's documents point at the network mirror's files"))
	}
	return nil
}

// checkOutputs refuses destinations that cannot take the build, before
// any download.
func (r *run) checkOutputs(ctx context.Context) error {
	trees := r.outs.trees()
	switch {
	case len(trees) == 0 && r.opts.RegistryReplica:
		return inputerr.Wrap(errors.New("--registry-replica writes the replica next to a network mirror's files: add a directory or a bucket with --out"))
	case len(r.in.Modules) > 0 && len(trees) == 0:
		return inputerr.Wrap(errors.New("modules are published as a static module registry next to a mirror tree: add a directory or a bucket with --out"))
	}
	return r.outs.checkRegistries(ctx, r.in.Requirements)
}

// source is where the build gets its packages.
func (r *run) source(ctx context.Context) (mirror.Source, error) {
	if r.opts.From == "" {
		return endpoint.OpenSource(ctx, nil, r.s)
	}
	ref, err := endpoint.Parse(r.opts.From)
	if err != nil {
		return nil, fmt.Errorf("--from: %w", err)
	}
	return endpoint.OpenSource(ctx, &ref, r.s)
}

func (r *run) run(ctx context.Context) (report *Report, err error) {
	for _, w := range r.in.Warnings {
		r.opts.Events.warn(w)
	}
	for _, n := range r.notes {
		r.opts.Events.line(n)
	}
	plan, err := r.builder.Plan(ctx, r.in.Requirements)
	if err != nil {
		return nil, fmt.Errorf("nothing was written, because the build cannot be planned:\n%w", err)
	}
	report = &Report{DryRun: r.opts.DryRun, Destinations: r.outs.locations(), VulnDB: r.vulnDB.Location()}
	if r.opts.DryRun {
		report.Build = r.builder.DryRun(ctx, plan)
		r.buildModules(ctx, nil, report.Build)
		return report, report.Build.Err()
	}
	work, release, err := r.outs.lock(ctx, r.s.LockTimeout, r.s.CacheDir)
	if err != nil {
		return report, err
	}
	defer func() { err = errors.Join(err, release()) }()
	r.builder.Work = work
	report.Build, err = r.execute(ctx, plan)
	report.Downloaded = r.builder.Progress().Bytes
	fin, cancel := app.Finishing(ctx)
	defer cancel()
	if ferr := r.recordFirstSeen(fin); ferr != nil {
		err = errors.Join(err, ferr)
	}
	if report.Build != nil {
		r.recordVulnerabilities(fin, report.Build)
		r.recordDeprecations(fin, report.Build)
		rec := app.BuildChanges(report.Build, r.builder.Options.Cooldown.Holds())
		if cerr := app.RecordChanges(fin, r.outs.trees(), rec, r.started, r.s, r.opts.Events.warn); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}
	if err != nil {
		return report, errors.Join(err, r.sealAfterFailure(fin))
	}
	if err := r.refreshViews(ctx); err != nil {
		return report, err
	}
	report.LockFiles, err = r.writeLockFiles(ctx)
	return report, err
}

// execute publishes the plan, the modules and the filesystem views.
func (r *run) execute(ctx context.Context, plan *mirror.Plan) (*mirror.Report, error) {
	if r.opts.Events.Started != nil {
		r.opts.Events.Started(plan.Packages(), r.builder.Progress)
	}
	report := r.builder.Execute(ctx, plan)
	if err := r.outs.materialize(ctx, r.builder.Work, r.kind, r.s.ZipLimits); err != nil {
		return report, err
	}
	r.buildModules(ctx, r.builder.Work, report)
	err := report.Err()
	if ctx.Err() != nil {
		err = errors.Join(ctx.Err(), err)
	}
	if err != nil {
		return report, fmt.Errorf("build failed:\n%w", err)
	}
	return report, nil
}

// writeLockFiles writes the configurations' lock files from the mirror,
// when asked to.
func (r *run) writeLockFiles(ctx context.Context) ([]app.LockFile, error) {
	if !r.opts.WriteLockFiles {
		return nil, nil
	}
	locker := &mirror.Locker{Mirror: r.outs.packages(), Checker: signing.Checker{}, Trust: r.s.Trust, Limits: r.s.ZipLimits}
	files, err := app.WriteLockFiles(ctx, locker, r.in.Configurations, r.in.Platforms)
	if err != nil {
		return files, fmt.Errorf("the mirror was built, but %w", err)
	}
	return files, nil
}

// openCooldown reads when the mirror first saw each release, for builds
// with a min_age; nil when none has one.
func (r *run) openCooldown(ctx context.Context) (*mirror.Cooldown, error) {
	aged := slices.ContainsFunc(r.in.Requirements, func(q mirror.Requirement) bool { return q.MinAge > 0 }) ||
		slices.ContainsFunc(r.in.Modules, func(q mirror.ModuleRequirement) bool { return q.MinAge > 0 })
	if !aged {
		return nil, nil
	}
	trees := r.outs.trees()
	if len(trees) == 0 {
		return nil, inputerr.Wrap(errors.New("min_age records when releases were first seen in the mirror: add a directory or a bucket with --out"))
	}
	seen, err := trees[0].ReadFirstSeen(ctx)
	if err != nil {
		return nil, fmt.Errorf("read when releases were first seen in %s: %w", trees[0].Location(), err)
	}
	return mirror.NewCooldown(seen, r.s.Now), nil
}

// recordFirstSeen records in every tree when the build first saw the
// releases it looked at.
func (r *run) recordFirstSeen(ctx context.Context) error {
	c := r.builder.Options.Cooldown
	if c == nil {
		return nil
	}
	seen, added := c.Seen()
	if !added {
		return nil
	}
	for _, t := range r.outs.trees() {
		if err := t.RecordFirstSeen(ctx, seen); err != nil {
			return fmt.Errorf("record when releases were first seen in %s: %w", t.Location(), err)
		}
	}
	return nil
}

// recordDeprecations keeps in every tree what the providers' version
// lists warned of now (a deprecation, say), and drops what they no longer
// warn of, for the views (the catalog, the page, the registry replica).
// Failing to write it is a warning: the mirror is built.
func (r *run) recordDeprecations(ctx context.Context, rep *mirror.Report) {
	for _, t := range r.outs.trees() {
		for _, d := range rep.Deprecations {
			if err := t.RecordWarnings(ctx, d.Provider, d.Warnings); err != nil {
				r.opts.Events.line(fmt.Sprintf("warning: the mirror was built, but the registry's warnings of %s were not kept in %s: %v", d.Provider, t.Location(), err))
			}
		}
	}
}

// recordVulnerabilities records in every tree the advisories of the
// packages the build read and published or kept (matched from the SBOMs
// the tree holds), with a vulnerability database, and which database.
// The record is for people (the catalog page): failing to write it is a
// warning, the mirror is built.
func (r *run) recordVulnerabilities(ctx context.Context, rep *mirror.Report) {
	var found []layout.PackageAdvisories
	for _, res := range rep.Results {
		if !res.Advised || (res.Status != mirror.StatusMirrored && res.Status != mirror.StatusPresent) {
			continue
		}
		pa := layout.PackageAdvisories{Key: res.String(), Advisories: map[string]layout.Advisory{}}
		for _, a := range res.Advisories {
			pa.Advisories[a.ID] = layout.Advisory{Aliases: a.Aliases, Summary: a.Summary, Module: a.Module, Found: a.Found, Fixed: a.Fixed}
		}
		found = append(found, pa)
	}
	if len(found) == 0 {
		return
	}
	for _, t := range r.outs.trees() {
		if err := t.RecordVulnerabilities(ctx, r.vulnDB.Database(), found); err != nil {
			r.opts.Events.line(fmt.Sprintf("warning: the mirror was built, but the known vulnerabilities were not recorded in %s: %v", t.Location(), err))
		}
	}
}

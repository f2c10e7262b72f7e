// Package build is the build use case: it gathers what to mirror (the
// manifest's requirements and those of every configuration root), opens
// the destinations, plans, publishes every package from one download into
// each destination, then writes what the build was asked for besides the
// mirror: the filesystem views, the registry replica and the lock files.
//
// It does not select, fetch or verify anything itself (package mirror
// does), know the tree's files (package layout does), speak HTTP (the
// caller hands it a mirror.Source) or print: it reports through Hooks.
package build

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/locks"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// InputError marks a build that cannot run as asked: nothing to mirror,
// no platforms for the configurations, destinations that clash.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Options say what to build and where.
type Options struct {
	Manifest *config.Manifest
	// Dirs are configuration roots named on the command line, besides the
	// manifest's configuration blocks.
	Dirs []string
	// Platforms are the platforms of the configurations' providers; empty
	// means the manifest's.
	Platforms []addrs.Platform
	Out       []string
	Layout    layout.Kind
	// Destinations say how to open destinations that are not directories.
	Destinations Destinations
	Source       mirror.Source
	Checker      mirror.SignatureChecker
	// Modules fetch and read module packages, for builds with modules.
	Modules Modules
	// Builder are the build's policies; Trust and ZipLimits come from the
	// caller (the manifest with the command line's overrides).
	Builder         mirror.Options
	LockTimeout     time.Duration
	DryRun          bool
	RegistryReplica bool
	WriteLockFiles  bool
	// OCIModuleLocations makes the module registry's download documents
	// point at the packages in the build's OCI registry (oci://...?digest=)
	// instead of the zips in the tree.
	OCIModuleLocations bool
	// Now is the clock of the cool-down (min_age); nil means time.Now.
	Now func() time.Time
	// NoModules mirrors providers only: the manifest's module blocks and
	// the configurations' module calls are left out.
	NoModules bool
}

// Hooks are how a build reports; every one may be nil.
type Hooks struct {
	Line    func(string)                                        // a message
	Started func(packages int, progress func() mirror.Progress) // execution starts
	Done    func(r *mirror.Report, err error)                   // execution ended
	DryRun  func(r *mirror.Report)                              // the dry run's report
}

func (h Hooks) line(s string) {
	if h.Line != nil {
		h.Line(s)
	}
}

// Run builds. A failure of the build itself is returned after Done.
func Run(ctx context.Context, opts Options, hooks Hooks) (err error) {
	in, err := readInputs(opts)
	if err != nil {
		return err
	}
	if opts.OCIModuleLocations && len(in.modules) == 0 {
		return &InputError{errors.New("--oci-module-locations needs modules to mirror")}
	}
	if opts.RegistryReplica && opts.Layout != layout.Network {
		return &InputError{errors.New("--registry-replica needs --layout network: the replica's documents point at the network mirror's files")}
	}
	outs, err := openOutputs(ctx, opts.Out, opts.Layout, opts.Destinations)
	if err != nil {
		return err
	}
	if len(outs.trees()) == 0 && opts.RegistryReplica {
		return &InputError{errors.New("--registry-replica writes the replica next to a network mirror's files: add a directory or a bucket with --out")}
	}
	locks.Warn(in.roots, hooks.line)
	if err := outs.checkRegistries(ctx, in.reqs); err != nil {
		return err
	}
	if outs.hasRegistry() {
		// Shards that pushed platforms of one version into a registry
		// would race on its tag.
		opts.Builder.Shard.ByVersion = true
	}
	if len(in.modules) > 0 && len(outs.trees()) == 0 {
		return &InputError{errors.New("modules are published as a static module registry next to a mirror tree: add a directory or a bucket with --out")}
	}
	cooldown, err := openCooldown(ctx, opts, in, outs)
	if err != nil {
		return err
	}
	opts.Builder.Cooldown = cooldown
	b := &mirror.Builder{Source: opts.Source, Checker: opts.Checker, Dests: outs.dests(opts.Destinations.OverwriteOCITags), Options: opts.Builder}
	plan, err := b.Plan(ctx, in.reqs)
	if err != nil {
		return fmt.Errorf("nothing was written, because the build cannot be planned:\n%w", err)
	}
	if opts.DryRun {
		report := b.DryRun(ctx, plan)
		buildModules(ctx, opts, in, outs, nil, report, true)
		if hooks.DryRun != nil {
			hooks.DryRun(report)
		}
		return report.Err()
	}
	work, release, err := outs.lock(ctx, opts.LockTimeout, opts.Destinations.WorkDir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	b.Work = work
	if err := execute(ctx, b, plan, in, outs, opts, hooks); err != nil {
		return errors.Join(err, recordFirstSeen(ctx, cooldown, outs))
	}
	if err := recordFirstSeen(ctx, cooldown, outs); err != nil {
		return err
	}
	return afterBuild(ctx, opts, in, outs, hooks)
}

// execute publishes the plan and the filesystem views, and reports.
func execute(ctx context.Context, b *mirror.Builder, plan *mirror.Plan, in inputs, outs outputs, opts Options, hooks Hooks) error {
	if hooks.Started != nil {
		hooks.Started(plan.Packages(), b.Progress)
	}
	report := b.Execute(ctx, plan)
	if err := outs.materialize(ctx, b.Work, opts.Layout, opts.Builder.ZipLimits); err != nil {
		return err
	}
	buildModules(ctx, opts, in, outs, b.Work, report, false)
	err := report.Err()
	if ctx.Err() != nil {
		err = errors.Join(ctx.Err(), err)
	}
	if hooks.Done != nil {
		hooks.Done(report, err)
	}
	if err != nil {
		return fmt.Errorf("build failed:\n%w", err)
	}
	return nil
}

// afterBuild writes what a successful build may be asked for besides the
// mirror: the registry replica and the configurations' lock files.
func afterBuild(ctx context.Context, opts Options, in inputs, outs outputs, hooks Hooks) error {
	locate, err := outs.moduleLocator(opts.OCIModuleLocations)
	if err != nil {
		return err
	}
	if !opts.RegistryReplica && len(in.modules) > 0 {
		for _, t := range outs.trees() {
			if err := WriteModuleReplica(ctx, t, locate, hooks.line); err != nil {
				return err
			}
		}
	}
	if opts.RegistryReplica {
		for _, t := range outs.trees() {
			if err := WriteReplica(ctx, t, opts.Checker, opts.Builder.Trust, locate, hooks.line); err != nil {
				return err
			}
		}
	}
	for _, t := range outs.trees() {
		if err := WriteCatalog(ctx, t); err != nil {
			return err
		}
	}
	if !opts.WriteLockFiles {
		return nil
	}
	locker := &mirror.Locker{Mirror: outs.packages(), Checker: opts.Checker, Trust: opts.Builder.Trust}
	updates, err := locks.Compute(ctx, locker, in.roots, in.platforms)
	if err != nil {
		return fmt.Errorf("the mirror was built, but no lock file was written:\n%w", err)
	}
	return locks.Write(updates, hooks.line)
}

// inputs are what a build mirrors.
type inputs struct {
	roots     []locks.Root
	reqs      []mirror.Requirement
	modules   []mirror.ModuleRequirement
	platforms []addrs.Platform // of the configurations
}

// Requirements returns what a build with opts would mirror, from the
// same inputs (Manifest, Dirs and Platforms; nothing else in opts is
// read) and without contacting any registry: the manifest's provider
// blocks and the requirements of every configuration root. The warnings
// are what reading the configurations warned about (a remote module that
// is not installed, whose providers are then missing). Prune keeps what
// they select.
func Requirements(opts Options) ([]mirror.Requirement, []string, error) {
	in, err := readInputs(opts)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	locks.Warn(in.roots, func(s string) { warnings = append(warnings, s) })
	return in.reqs, warnings, nil
}

// readInputs gathers the requirements of the manifest and of every
// configuration root.
func readInputs(opts Options) (inputs, error) {
	m := opts.Manifest
	dirs := append(slices.Clone(m.Configurations), opts.Dirs...)
	if len(dirs) == 0 && len(m.Requirements) == 0 && (len(m.Modules) == 0 || opts.NoModules) {
		return inputs{}, &InputError{errors.New("nothing to mirror: add provider, module or configuration blocks to the manifest, or name configuration directories")}
	}
	if opts.WriteLockFiles && len(dirs) == 0 {
		return inputs{}, &InputError{errors.New("--write-lock-files needs configurations: name their directories or add configuration blocks")}
	}
	in := inputs{reqs: slices.Clone(m.Requirements)}
	if !opts.NoModules {
		in.modules = slices.Clone(m.Modules)
	}
	if len(dirs) == 0 {
		return in, nil
	}
	in.platforms = opts.Platforms
	if len(in.platforms) == 0 {
		in.platforms = m.Platforms
	}
	if len(in.platforms) == 0 {
		return inputs{}, &InputError{errors.New("no platforms for the configurations: pass --platform os_arch or set platforms in the manifest")}
	}
	roots, err := locks.LoadRoots(dirs)
	if err != nil {
		return inputs{}, err
	}
	more, err := locks.Requirements(roots, in.platforms)
	if err != nil {
		return inputs{}, err
	}
	for i := range more {
		more[i].MinAge = m.MinAge
	}
	in.roots, in.reqs = roots, append(in.reqs, more...)
	if !opts.NoModules {
		for _, r := range locks.ModuleRequirements(roots) {
			r.MinAge = m.MinAge
			in.modules = append(in.modules, r)
		}
	}
	return in, nil
}

// WriteReplica regenerates a tree's registry replica and says what it
// holds and how clients use it.
func WriteReplica(ctx context.Context, tree *layout.Tree, checker mirror.SignatureChecker, trust mirror.TrustPolicy, locate replica.ModuleLocator, line func(string)) error {
	report, err := replica.WriteWith(ctx, tree, &replica.Trust{Checker: checker, Policy: trust}, locate)
	if report == nil {
		return err
	}
	for _, w := range report.Warnings {
		line("warning  registry replica: " + w)
	}
	line(fmt.Sprintf("registry replica in %s: %d providers, %d versions, %d packages",
		strings.TrimSuffix(tree.Location(), "/")+"/"+replica.Dir, report.Providers, report.Versions, report.Packages))
	for _, h := range report.Hosts {
		block := replica.ServicesBlock(h, "https://MIRROR/", report.Services[h])
		line("  " + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n  "))
	}
	if err != nil {
		return fmt.Errorf("the registry replica leaves out what no longer verifies:\n%w", err)
	}
	return nil
}

// openCooldown reads when the mirror first saw each release, for builds
// with a min_age; nil when none has one.
func openCooldown(ctx context.Context, opts Options, in inputs, outs outputs) (*mirror.Cooldown, error) {
	aged := slices.ContainsFunc(in.reqs, func(r mirror.Requirement) bool { return r.MinAge > 0 }) ||
		slices.ContainsFunc(in.modules, func(r mirror.ModuleRequirement) bool { return r.MinAge > 0 })
	if !aged {
		return nil, nil
	}
	trees := outs.trees()
	if len(trees) == 0 {
		return nil, &InputError{errors.New("min_age records when releases were first seen in the mirror: add a directory or a bucket with --out")}
	}
	seen, err := trees[0].ReadFirstSeen(ctx)
	if err != nil {
		return nil, fmt.Errorf("read when releases were first seen: %w", err)
	}
	return mirror.NewCooldown(seen, opts.Now), nil
}

// recordFirstSeen keeps the first-seen times of a build with a min_age in
// every tree, so the cool-down runs from the first build that saw them.
func recordFirstSeen(ctx context.Context, c *mirror.Cooldown, outs outputs) error {
	if c == nil {
		return nil
	}
	seen, added := c.Seen()
	if !added {
		return nil
	}
	for _, t := range outs.trees() {
		if err := t.RecordFirstSeen(ctx, seen); err != nil {
			return fmt.Errorf("record when releases were first seen in %s: %w", t.Location(), err)
		}
	}
	return nil
}

// WriteCatalog writes the tree's browsable catalog, index.html, from what
// the tree holds (rewritten only when it changes).
func WriteCatalog(ctx context.Context, tree *layout.Tree) error {
	if err := htmlcatalog.Write(ctx, tree, htmlcatalog.Options{}); err != nil {
		return fmt.Errorf("write the catalog page of %s: %w", tree.Location(), err)
	}
	return nil
}

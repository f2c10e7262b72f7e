package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// ModuleRequirement says which versions of one module package to mirror.
type ModuleRequirement struct {
	Module addrs.Module
	// Constraint is a module version constraint in OpenTofu's module
	// syntax (hashicorp/go-version), "" for any version.
	Constraint string
	// Newest keeps only the newest N matching versions; 0 keeps all.
	Newest int
	// From names where the requirement was declared, for messages.
	From string
	// MinAge holds back versions first seen upstream less than this long
	// ago (ModuleBuilder.Cooldown).
	MinAge time.Duration

	// root and via are where the chain of calls that led to the
	// requirement began (From of the requirement first required) and the
	// module versions in it, the one required first first; both empty for
	// what was required directly.
	root string
	via  []string
}

// ModuleSource is an origin registry of module packages.
type ModuleSource interface {
	// ModuleVersions lists the versions the registry offers.
	ModuleVersions(ctx context.Context, m addrs.Module) (addrs.VersionList, error)
	// ModuleLocation returns the go-getter location the registry points
	// at for one version, relative locations already resolved, and who
	// named it.
	ModuleLocation(ctx context.Context, m addrs.Module, v addrs.Version) (ModuleLocation, error)
}

// ModuleLocation is where a module registry says a version's package is,
// and which registry said so: the fetcher holds a location to what the
// registry that names it may name, and gives it only the credentials the
// manifest lets that registry's locations have.
type ModuleLocation struct {
	// Location is the go-getter location, relative locations resolved.
	// It may hold credentials (a presigned URL): never print it.
	Location string
	// Registry is the host the module's address names.
	Registry addrs.Hostname
	// NamedAt is the URL of the registry's answer that named the
	// location (its download endpoint).
	NamedAt string
}

// ModuleFetcher fetches what a module location names.
type ModuleFetcher interface {
	// FetchModule fetches location into dir, an empty directory that
	// becomes the package root.
	FetchModule(ctx context.Context, location ModuleLocation, dir string) (ModuleFetch, error)
}

// ModuleFetch is what fetching a location found.
type ModuleFetch struct {
	Subdir        string // where the module lives in the package ("" = root)
	Commit        string // the git commit checked out, for git locations
	ArchiveSHA256 string // the downloaded archive's digest, for archives
	Source        string // the location without credentials, for provenance
}

// ModuleCallReader reads which registry modules a fetched module calls,
// for transitive mirroring, and says which calls it did not follow that
// init would still make (warnings).
type ModuleCallReader interface {
	ModuleCalls(packageRoot, subdir string) ([]ModuleRequirement, []string, error)
}

// ModuleResult is what happened to one module version.
type ModuleResult struct {
	Module  addrs.Module
	Version addrs.Version
	Status  Status
	Err     error
	Bytes   int64
	Commit  string
}

// ErrModuleUnknown means the registry does not know the module.
var ErrModuleUnknown = errors.New("the registry does not know this module")

// ErrUpstreamMoved means a module version's upstream now gives other
// content than the mirror published for it (a moved tag): the published
// package is left as it was.
var ErrUpstreamMoved = errors.New("the upstream content of a published module version changed")

// ModuleError is the failure of one module version or requirement.
type ModuleError struct {
	Module  addrs.Module
	Version string // "" when no version was chosen yet
	// Input is true when what was asked for is wrong (an unknown module,
	// a constraint no version matches), not a failure to get it.
	Input bool
	Err   error
}

func (e *ModuleError) Error() string {
	if e.Version == "" {
		return fmt.Sprintf("module %s: %v", e.Module.ForDisplay(), e.Err)
	}
	return fmt.Sprintf("module %s %s: %v", e.Module.ForDisplay(), e.Version, e.Err)
}

func (e *ModuleError) Unwrap() error { return e.Err }

// ModuleTreeLimits bound the module tree a build follows, so that a
// registry that answers every module with one that calls another new one,
// or with one that calls hundreds, cannot keep a build fetching. A zero
// field takes its default from DefaultModuleTreeLimits.
type ModuleTreeLimits struct {
	// MaxDepth bounds a chain of calls: the modules in it, the one
	// required directly first.
	MaxDepth int
	// MaxModules bounds the module versions one build handles, required
	// directly and called.
	MaxModules int
	// MaxCalls bounds the registry modules one module version calls
	// (distinct module and constraint).
	MaxCalls int
}

// DefaultModuleTreeLimits fit real module trees with a wide margin:
//
//   - depth 16: registry modules nest two or three levels (a root calls
//     a cluster module, which calls a network or IAM module); a chain of
//     16 is far past any in use, and reached fast when one is endless;
//   - 1,000 module versions: a build mirrors the newest versions of tens
//     of modules with their calls, a few hundred versions at most; a
//     manifest that mirrors every version of many modules raises it;
//   - 100 calls per module: the modules with the most calls make a dozen
//     or two registry calls.
var DefaultModuleTreeLimits = ModuleTreeLimits{MaxDepth: 16, MaxModules: 1000, MaxCalls: 100}

// WithDefaults returns l with its zero (or negative) fields set from
// DefaultModuleTreeLimits.
func (l ModuleTreeLimits) WithDefaults() ModuleTreeLimits {
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultModuleTreeLimits.MaxDepth
	}
	if l.MaxModules <= 0 {
		l.MaxModules = DefaultModuleTreeLimits.MaxModules
	}
	if l.MaxCalls <= 0 {
		l.MaxCalls = DefaultModuleTreeLimits.MaxCalls
	}
	return l
}

// ModuleLimitError is a module tree that went past one of a build's
// ModuleTreeLimits: which limit, the setting of the manifest that raises
// it, and the chain of calls that led there, from where the first module
// was required to the module that went past.
type ModuleLimitError struct {
	// Setting is the manifest setting: "max_module_depth", "max_modules"
	// or "max_module_calls".
	Setting string
	Limit   int
	Chain   []string
	// Calls is how many modules the last module of the chain calls, for
	// max_module_calls.
	Calls int
	// more counts further module versions refused for max_modules.
	more int
}

func (e *ModuleLimitError) Error() string {
	chain := strings.Join(e.Chain, " → ")
	switch e.Setting {
	case "max_module_depth":
		return fmt.Sprintf("the chain of module calls %s is deeper than %d modules (raise max_module_depth in the manifest's settings block if it is real)", chain, e.Limit)
	case "max_module_calls":
		return fmt.Sprintf("it calls %d registry modules, more than %d (raise max_module_calls in the manifest's settings block if that is real); chain: %s", e.Calls, e.Limit, chain)
	}
	msg := fmt.Sprintf("the build reached %d module versions (raise max_modules in the manifest's settings block if it needs more); not mirrored: %s", e.Limit, chain)
	if e.more > 0 {
		msg += fmt.Sprintf(", and %d more module versions", e.more)
	}
	return msg
}

// ModuleBuilder mirrors module packages: it resolves requirements against
// the origin, fetches each new version's location, packs it into a
// package whose bytes depend only on its content, and publishes it into
// every destination; then it does the same for the registry modules the
// mirrored versions call, until the module tree is closed.
type ModuleBuilder struct {
	Source  ModuleSource
	Fetcher ModuleFetcher
	Calls   ModuleCallReader
	// Dests receive every package, from one fetch. At least one must keep
	// module records (a tree). A version that a destination with a record
	// holds and others lack is copied to them from there, without
	// fetching it again.
	Dests []Destination
	Work  *layout.Workspace
	// Parallel bounds concurrent fetches; 0 means DefaultParallel.
	Parallel int
	// Limits bound a package's content.
	Limits hashing.ModuleLimits
	// Tree bounds the module tree followed (zero fields: the defaults).
	Tree ModuleTreeLimits
	// Recheck selects versions the trees already hold to fetch again and
	// compare, so an upstream tag moved to other content is reported.
	Recheck Recheck
	// DryRun resolves and reports what would be fetched without fetching.
	DryRun bool
	// OnResult, if set, is called for every finished module version.
	// Calls are serialized.
	OnResult func(ModuleResult)
	// Cooldown, if set, holds back versions younger than their
	// requirement's MinAge (reported as warnings).
	Cooldown *Cooldown

	mu       sync.Mutex
	tree     ModuleTreeLimits
	tooMany  *ModuleLimitError // the build reached Tree.MaxModules
	seen     map[string]bool   // module + version handled
	versions map[string]addrs.VersionList
	results  []ModuleResult
	errs     []error
	warnings []string
}

// Build mirrors reqs and every module they call, and adds its outcomes to
// report.
func (b *ModuleBuilder) Build(ctx context.Context, reqs []ModuleRequirement, report *Report) {
	b.seen, b.versions, b.tree, b.tooMany = map[string]bool{}, map[string]addrs.VersionList{}, b.Tree.WithDefaults(), nil
	for len(reqs) > 0 && ctx.Err() == nil {
		reqs = b.wave(ctx, reqs)
	}
	slices.SortFunc(b.results, func(a, c ModuleResult) int {
		if n := strings.Compare(a.Module.String(), c.Module.String()); n != 0 {
			return n
		}
		switch {
		case a.Version.LessThan(c.Version):
			return -1
		case c.Version.LessThan(a.Version):
			return 1
		}
		return 0
	})
	report.Modules = append(report.Modules, b.results...)
	report.Warnings = append(report.Warnings, b.warnings...)
	report.Errors = append(report.Errors, b.errs...)
	if err := ctx.Err(); err != nil {
		report.Errors = append(report.Errors, err)
	}
}

// wave handles one level of the module tree and returns the requirements
// of the next: the calls of the versions it mirrored or found.
func (b *ModuleBuilder) wave(ctx context.Context, reqs []ModuleRequirement) []ModuleRequirement {
	type job struct {
		m     addrs.Module
		v     addrs.Version
		chain []string
	}
	var jobs []job
	for _, r := range reqs {
		if len(r.via) >= b.tree.MaxDepth {
			b.refuse(r, &ModuleLimitError{Setting: "max_module_depth", Limit: b.tree.MaxDepth, Chain: chain(r, "")})
			continue
		}
		for _, v := range b.selectVersions(ctx, r) {
			key := r.Module.String() + " " + v.String()
			if b.seen[key] {
				continue
			}
			if len(b.seen) >= b.tree.MaxModules {
				b.refuseOneTooMany(r, v)
				continue
			}
			b.seen[key] = true
			jobs = append(jobs, job{r.Module, v, chain(r, v.String())})
		}
	}
	var next []ModuleRequirement
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.parallel())
	for _, j := range jobs {
		g.Go(func() error {
			calls := b.version(gctx, j.m, j.v, j.chain)
			b.mu.Lock()
			next = append(next, calls...)
			b.mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	slices.SortFunc(next, func(a, c ModuleRequirement) int {
		return strings.Compare(a.Module.String()+" "+a.Constraint, c.Module.String()+" "+c.Constraint)
	})
	return next
}

// chain is the chain of calls that leads to a version of r's module (""
// for the module, no version chosen): where the first module was
// required, each module version that called the next, and r's module.
func chain(r ModuleRequirement, version string) []string {
	root := r.root
	if root == "" {
		root = r.From
	}
	if root == "" {
		root = "the build"
	}
	last := r.Module.ForDisplay()
	if version != "" {
		last += " " + version
	}
	return slices.Concat([]string{root}, r.via, []string{last})
}

// refuse records that a requirement went past a limit.
func (b *ModuleBuilder) refuse(r ModuleRequirement, err *ModuleLimitError) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, &ModuleError{Module: r.Module, Err: err})
}

// refuseOneTooMany records a module version not mirrored because the
// build reached Tree.MaxModules: the first with its chain, the others
// counted in the same error.
func (b *ModuleBuilder) refuseOneTooMany(r ModuleRequirement, v addrs.Version) {
	if b.tooMany != nil {
		b.tooMany.more++
		return
	}
	b.tooMany = &ModuleLimitError{Setting: "max_modules", Limit: b.tree.MaxModules, Chain: chain(r, v.String())}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.errs = append(b.errs, &ModuleError{Module: r.Module, Version: v.String(), Err: b.tooMany})
}

func (b *ModuleBuilder) parallel() int {
	if b.Parallel > 0 {
		return b.Parallel
	}
	return DefaultParallel
}

// selectVersions resolves a requirement, newest first; a failure is
// recorded and selects nothing.
func (b *ModuleBuilder) selectVersions(ctx context.Context, r ModuleRequirement) []addrs.Version {
	available, err := b.available(ctx, r.Module)
	input := errors.Is(err, ErrModuleUnknown)
	if err == nil {
		var held []string
		available, held = b.cooldown(r, available)
		var sel []addrs.Version
		sel, err = SelectModuleVersions(r, available)
		if err == nil || len(held) > 0 {
			return sel
		}
		input = true
	}
	if r.From != "" {
		err = fmt.Errorf("%w (required by %s)", err, r.From)
	}
	// A module a mirrored module calls is that module's upstream's
	// choice, not the user's input: its failure leaves the rest of the
	// build published (exit 1), where a module the manifest or a
	// configuration names is refused before anything is written (exit 2).
	calledByAModule := r.root != ""
	b.errs = append(b.errs, &ModuleError{Module: r.Module, Input: input && !calledByAModule, Err: err})
	return nil
}

// cooldown keeps the versions the requirement allows that are old enough,
// and reports the others.
func (b *ModuleBuilder) cooldown(r ModuleRequirement, available addrs.VersionList) (addrs.VersionList, []string) {
	if b.Cooldown == nil || r.MinAge <= 0 {
		return available, nil
	}
	cons, err := addrs.ParseModuleConstraint(r.Constraint)
	if err != nil {
		return available, nil // SelectModuleVersions reports it
	}
	var allowed addrs.VersionList
	for _, v := range available {
		if cons.Allows(v) {
			allowed = append(allowed, v)
		}
	}
	old, held := b.Cooldown.filter("module "+r.Module.String(), allowed, r.MinAge)
	b.mu.Lock()
	b.warnings = append(b.warnings, held...)
	b.mu.Unlock()
	return old, held
}

func (b *ModuleBuilder) available(ctx context.Context, m addrs.Module) (addrs.VersionList, error) {
	if vs, ok := b.versions[m.String()]; ok {
		return vs, nil
	}
	vs, err := b.Source.ModuleVersions(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	b.versions[m.String()] = vs
	return vs, nil
}

// CheckModuleConstraint reports why a module version constraint is not
// one OpenTofu accepts, or allows no version at all, if so.
func CheckModuleConstraint(s string) error {
	c, err := addrs.ParseModuleConstraint(s)
	if err != nil {
		return err
	}
	if c.AllowsNone() {
		return fmt.Errorf("version constraint %q allows no version", s)
	}
	return nil
}

// SelectModuleVersions returns the versions of available a requirement
// selects, newest first, by OpenTofu's rule for module calls
// (addrs.ModuleConstraint).
func SelectModuleVersions(r ModuleRequirement, available addrs.VersionList) ([]addrs.Version, error) {
	cons, err := addrs.ParseModuleConstraint(r.Constraint)
	if err != nil {
		return nil, err
	}
	sorted := slices.Clone(available)
	sorted.Sort()
	var out []addrs.Version
	for _, v := range slices.Backward(sorted) {
		if !cons.Allows(v) || (len(out) > 0 && out[len(out)-1].Same(v)) {
			continue
		}
		out = append(out, v)
		if r.Newest > 0 && len(out) == r.Newest {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no version matches %q (the registry offers %d)", r.Constraint, len(available))
	}
	return out, nil
}

// version mirrors one module version into every destination that lacks
// it and returns the requirements of the modules it calls. chain is the
// chain of calls that led to it, itself last.
func (b *ModuleBuilder) version(ctx context.Context, m addrs.Module, v addrs.Version, chain []string) []ModuleRequirement {
	res := ModuleResult{Module: m, Version: v}
	rec, from, lacking, order, err := b.held(ctx, m, v)
	switch {
	case err != nil:
	case rec != nil && !b.Recheck.Selects(m.String(), v):
		res.Status, res.Bytes, res.Commit = StatusPresent, rec.Size, rec.Upstream.Commit
		if err = b.checkCalls(len(rec.Calls), chain); err != nil {
			break
		}
		if len(lacking) > 0 && !b.DryRun {
			err = b.copyTo(ctx, lacking, from, m, v, *rec)
			res.Status = StatusMirrored
		}
	case b.DryRun:
		res.Status = StatusPlanned
	default:
		held := rec
		var fetched layout.ModuleRecord
		fetched, err = b.mirror(ctx, m, v, chain, order)
		if err != nil && held != nil {
			// A recheck that failed (the upstream moved, or did not
			// answer) leaves the version the mirror holds: the modules it
			// calls are still the mirror's, and are rechecked too.
			res.Status, res.Err = StatusFailed, &ModuleError{Module: m, Version: v.String(), Err: err}
			b.finish(res)
			return callRequirements(m, v, held.Calls, chain)
		}
		rec = &fetched
		res.Status, res.Bytes, res.Commit = StatusMirrored, rec.Size, rec.Upstream.Commit
		if from != nil && len(lacking) == 0 && err == nil {
			res.Status = StatusPresent // rechecked: the upstream still gives the same
		}
	}
	if err != nil {
		res.Status, res.Err = StatusFailed, &ModuleError{Module: m, Version: v.String(), Err: err}
	}
	b.finish(res)
	if err != nil || rec == nil {
		return nil
	}
	return callRequirements(m, v, rec.Calls, chain)
}

// checkCalls refuses a module version that calls more registry modules
// than Tree.MaxCalls.
func (b *ModuleBuilder) checkCalls(calls int, chain []string) error {
	if calls <= b.tree.MaxCalls {
		return nil
	}
	return &ModuleLimitError{Setting: "max_module_calls", Limit: b.tree.MaxCalls, Calls: calls, Chain: chain}
}

func (b *ModuleBuilder) finish(res ModuleResult) {
	res.Status = canceled(res.Status, res.Err)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.results = append(b.results, res)
	if b.OnResult != nil {
		b.OnResult(res)
	}
}

// held asks every destination about a module version. It returns the
// version's record and a destination holding it with that record (nil
// when none does), the destinations that lack that package, and every
// destination in the order to publish into: those that hold a package of
// the version first, so that one refusing another package (a moved tag)
// stops the publication before a destination that held nothing takes it.
func (b *ModuleBuilder) held(ctx context.Context, m addrs.Module, v addrs.Version) (*layout.ModuleRecord, Destination, []Destination, []Destination, error) {
	found := make([]layout.HeldModule, len(b.Dests))
	var rec *layout.ModuleRecord
	var from Destination
	for i, d := range b.Dests {
		h, err := d.HeldModule(ctx, m, v)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("ask %s: %w", d.Location(), err)
		}
		found[i] = h
		if rec == nil && h.Found && h.Record != nil {
			rec, from = h.Record, d
		}
	}
	var order, lacking []Destination
	for _, holds := range []bool{true, false} {
		for i, d := range b.Dests {
			if found[i].Found != holds {
				continue
			}
			order = append(order, d)
			if rec == nil || !found[i].Found || found[i].SHA256 != rec.SHA256 {
				lacking = append(lacking, d)
			}
		}
	}
	return rec, from, lacking, order, nil
}

// copyTo publishes a version one destination holds into those that lack
// it, from that destination's copy (checked against the record).
func (b *ModuleBuilder) copyTo(ctx context.Context, lacking []Destination, from Destination, m addrs.Module, v addrs.Version, rec layout.ModuleRecord) error {
	staged, cleanup, err := b.copyFrom(ctx, from, m, v, rec)
	if err != nil {
		return err
	}
	defer cleanup()
	return b.publishModule(ctx, lacking, layout.ModuleRelease{Module: m, Version: v, Staged: staged, Record: rec})
}

// copyFrom copies a destination's package of a version into the
// workspace and checks it against the record.
func (b *ModuleBuilder) copyFrom(ctx context.Context, from Destination, m addrs.Module, v addrs.Version, rec layout.ModuleRecord) (string, func(), error) {
	body, err := from.OpenModuleArchive(ctx, m, v)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = body.Close() }()
	f, err := os.CreateTemp(b.Work.StagingDir(), "module-*.zip")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.Remove(f.Name()) }
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(body, rec.Size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && hex.EncodeToString(h.Sum(nil)) != rec.SHA256 {
		err = fmt.Errorf("the package in %s is not the recorded one (SHA-256 %s); run tfmirror verify", from.Location(), rec.SHA256)
	}
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}

// publishModule publishes a version into each destination. A tree that
// holds another package for the version refuses it: the upstream moved.
func (b *ModuleBuilder) publishModule(ctx context.Context, dests []Destination, r layout.ModuleRelease) error {
	for _, d := range dests {
		err := d.PublishModule(ctx, r)
		var conflict *layout.ConflictError
		if errors.As(err, &conflict) {
			return fmt.Errorf("%w: %w", ErrUpstreamMoved, err)
		}
		if err != nil {
			return fmt.Errorf("publish into %s: %w", d.Location(), err)
		}
	}
	return nil
}

// callRequirements are the requirements of a module version's calls;
// chain is the chain of calls that led to the version (chain's result).
func callRequirements(m addrs.Module, v addrs.Version, calls []layout.ModuleCall, chain []string) []ModuleRequirement {
	out := make([]ModuleRequirement, 0, len(calls))
	for _, c := range calls {
		callee, err := addrs.ParseModule(c.Module)
		if err != nil {
			continue // checked when the record was read
		}
		out = append(out, ModuleRequirement{Module: callee, Constraint: c.Version, Newest: 1, From: m.ForDisplay() + " " + v.String(), root: chain[0], via: chain[1:]})
	}
	return out
}

// mirror fetches, packs and publishes one module version; one that calls
// more modules than Tree.MaxCalls is not published.
func (b *ModuleBuilder) mirror(ctx context.Context, m addrs.Module, v addrs.Version, chain []string, dests []Destination) (layout.ModuleRecord, error) {
	location, err := b.Source.ModuleLocation(ctx, m, v)
	if err != nil {
		return layout.ModuleRecord{}, fmt.Errorf("ask the registry where the package is: %w", err)
	}
	dir, err := os.MkdirTemp(b.Work.StagingDir(), "module-")
	if err != nil {
		return layout.ModuleRecord{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	root := filepath.Join(dir, "package")
	if err := os.Mkdir(root, 0o755); err != nil {
		return layout.ModuleRecord{}, err
	}
	got, err := b.Fetcher.FetchModule(ctx, location, root)
	if err != nil {
		return layout.ModuleRecord{}, err
	}
	if err := layout.CheckSubdir(got.Subdir); err != nil {
		return layout.ModuleRecord{}, fmt.Errorf("location %s: %w", got.Source, err)
	}
	calls, warnings, err := b.Calls.ModuleCalls(root, got.Subdir)
	if err != nil {
		return layout.ModuleRecord{}, fmt.Errorf("read the module's calls: %w", err)
	}
	b.mu.Lock()
	for _, w := range warnings {
		b.warnings = append(b.warnings, fmt.Sprintf("module %s %s: %s", m.ForDisplay(), v, w))
	}
	b.mu.Unlock()
	if err := b.checkCalls(len(moduleCalls(calls)), chain); err != nil {
		return layout.ModuleRecord{}, err
	}
	staged := filepath.Join(dir, "package.zip")
	rec, err := pack(root, staged, b.Limits)
	if err != nil {
		return layout.ModuleRecord{}, fmt.Errorf("pack the module from %s: %w", got.Source, err)
	}
	rec.Subdir = got.Subdir
	rec.Upstream = layout.ModuleUpstream{Location: got.Source, Commit: got.Commit, ArchiveSHA256: got.ArchiveSHA256}
	rec.Calls = moduleCalls(calls)
	r := layout.ModuleRelease{Module: m, Version: v, Staged: staged, Record: rec}
	return rec, b.publishModule(ctx, dests, r)
}

// moduleCalls turns call requirements into a record's sorted, unique
// calls.
func moduleCalls(reqs []ModuleRequirement) []layout.ModuleCall {
	out := []layout.ModuleCall{}
	for _, r := range reqs {
		c := layout.ModuleCall{Module: r.Module.String(), Version: r.Constraint}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, c layout.ModuleCall) int {
		return strings.Compare(a.Module+" "+a.Version, c.Module+" "+c.Version)
	})
	return out
}

// pack writes the package archive of root to staged and returns its
// digest and size in a record.
func pack(root, staged string, lim hashing.ModuleLimits) (layout.ModuleRecord, error) {
	f, err := os.Create(staged)
	if err != nil {
		return layout.ModuleRecord{}, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	_, err = hashing.PackModule(root, cw, lim)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return layout.ModuleRecord{}, err // the caller names where it came from
	}
	return layout.ModuleRecord{SHA256: hex.EncodeToString(h.Sum(nil)), Size: cw.n}, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

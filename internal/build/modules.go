package build

import (
	"context"
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/locks"
	"github.com/tfmirror/tfmirror/internal/modfetch"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Modules are what a build with modules needs besides its options: the
// origin registries, the fetcher of their locations and the reader of a
// fetched module's calls.
type Modules struct {
	Source  mirror.ModuleSource
	Fetcher mirror.ModuleFetcher
	Calls   mirror.ModuleCallReader
	Limits  hashing.ModuleLimits
	// Recheck fetches mirrored versions again to find upstream tags that
	// moved to other content.
	Recheck bool
	// OnResult, if set, hears of every finished module version.
	OnResult func(mirror.ModuleResult)
}

// buildModules mirrors the build's modules into every tree and adds the
// outcomes to report; with dryRun it only resolves them.
func buildModules(ctx context.Context, opts Options, in inputs, outs outputs, work *layout.Workspace, report *mirror.Report, dryRun bool) {
	if len(in.modules) == 0 {
		return
	}
	mb := &mirror.ModuleBuilder{
		Source: opts.Modules.Source, Fetcher: opts.Modules.Fetcher, Calls: opts.Modules.Calls,
		Dests: outs.dests(opts.Destinations.OverwriteOCITags), Work: work, Parallel: opts.Builder.Parallel, Limits: opts.Modules.Limits,
		Recheck: opts.Modules.Recheck, DryRun: dryRun, OnResult: opts.Modules.OnResult, Cooldown: opts.Builder.Cooldown,
	}
	mb.Build(ctx, in.modules, report)
}

// WriteModuleReplica writes a tree's module registry replica (the
// provider replica is left as it is) and says how clients use it.
func WriteModuleReplica(ctx context.Context, tree *layout.Tree, locate replica.ModuleLocator, line func(string)) error {
	report, err := replica.WriteWith(ctx, tree, nil, locate)
	if err != nil {
		return fmt.Errorf("write the module registry of %s: %w", tree.Location(), err)
	}
	for _, w := range report.Warnings {
		line("warning  module registry: " + w)
	}
	line(fmt.Sprintf("module registry in %s: %d modules", strings.TrimSuffix(tree.Location(), "/")+"/"+replica.Dir, report.Modules))
	for _, h := range report.Hosts {
		block := replica.ServicesBlock(h, "https://MIRROR/", report.Services[h])
		line("  " + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n  "))
	}
	return nil
}

// ModuleFetcher fetches module locations with modfetch.
type ModuleFetcher struct{ Fetcher *modfetch.Fetcher }

// FetchModule implements mirror.ModuleFetcher.
func (f ModuleFetcher) FetchModule(ctx context.Context, location, dir string) (mirror.ModuleFetch, error) {
	r, err := f.Fetcher.Fetch(ctx, location, dir)
	if err != nil {
		return mirror.ModuleFetch{}, err
	}
	return mirror.ModuleFetch{Subdir: r.Subdir, Commit: r.Commit, ArchiveSHA256: r.SHA256, Source: r.Source}, nil
}

// ModuleCalls reads a fetched module's registry module calls with
// tfconfig, for transitive mirroring.
type ModuleCalls struct{}

// ModuleCalls implements mirror.ModuleCallReader: one requirement per
// constraint written, each for the newest match, as "tofu init" selects.
func (ModuleCalls) ModuleCalls(root, subdir string) ([]mirror.ModuleRequirement, error) {
	calls, err := tfconfig.ModuleCalls(root, subdir)
	if err != nil {
		return nil, err
	}
	return locks.ModuleRequirementsOf(calls), nil
}

// moduleLocator is how the module registry's documents locate packages:
// in the tree (nil), or with ociLocations in the build's one OCI registry.
func (outs outputs) moduleLocator(ociLocations bool) (replica.ModuleLocator, error) {
	if !ociLocations {
		return nil, nil
	}
	var regs []*output
	for _, o := range outs {
		if o.OCI != nil && !o.OCI.IsLayout() {
			regs = append(regs, o)
		}
	}
	if len(regs) != 1 {
		return nil, &InputError{fmt.Errorf("--oci-module-locations needs exactly one oci:// destination for the documents to point at, not %d", len(regs))}
	}
	store := regs[0].OCI
	return func(m addrs.Module, v addrs.Version, rec layout.ModuleRecord) (string, error) {
		return store.ModuleSource(m, rec.SHA256, rec.Size, rec.Subdir)
	}, nil
}

package build

import (
	"context"
	"errors"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/internal/views"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// modules are what a build with modules needs besides its options: the
// origin registries (even with --from: modules come from their
// registries) and the fetcher of their locations.
type modules struct {
	source   mirror.ModuleSource
	fetcher  mirror.ModuleFetcher
	cooldown *mirror.Cooldown
}

func (r *run) openModules(cooldown *mirror.Cooldown) (*modules, error) {
	if len(r.in.Modules) == 0 {
		return nil, nil
	}
	source, err := endpoint.OpenRegistry(r.s)
	if err != nil {
		return nil, err
	}
	fetcher, err := endpoint.OpenModuleFetcher(r.s)
	if err != nil {
		return nil, err
	}
	return &modules{source: source, fetcher: fetcher, cooldown: cooldown}, nil
}

// buildModules mirrors the build's modules into every destination and
// adds the outcomes to report; with no workspace (a dry run) it only
// resolves them.
func (r *run) buildModules(ctx context.Context, work *layout.Workspace, report *mirror.Report) {
	if r.modules == nil {
		return
	}
	mb := &mirror.ModuleBuilder{
		Source: r.modules.source, Fetcher: r.modules.fetcher, Calls: tfconfig.CallReader{},
		Dests: r.outs.dests(), Work: work, Parallel: r.opts.Flags.Parallel, Limits: r.s.ModuleLimits, Tree: r.s.ModuleTree,
		Recheck: r.recheck, DryRun: work == nil, OnResult: r.opts.Events.Module, Cooldown: r.modules.cooldown,
	}
	mb.Build(ctx, r.in.Modules, report)
}

// refreshViews brings every tree's derived views in step with what the
// build published: the registry replicas and the catalog page.
func (r *run) refreshViews(ctx context.Context) error {
	locate, err := r.moduleLocator()
	if err != nil {
		return err
	}
	opts := views.Options{Providers: r.opts.RegistryReplica, Trust: replica.Trust{Checker: signing.Checker{}, Policy: r.s.Trust}, Locate: locate, Sign: r.s.SignKey}
	for _, t := range r.outs.trees() {
		report, err := views.Refresh(ctx, t, opts)
		for _, line := range report.Lines() {
			r.opts.Events.line(line)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sealAfterFailure signs, with --sign-key, the catalog of every tree a
// failed build recorded its changes in, so that the signature pins the
// record of what failed.
func (r *run) sealAfterFailure(ctx context.Context) error {
	if r.s.SignKey == nil {
		return nil
	}
	var errs []error
	for _, t := range r.outs.trees() {
		report, err := views.Seal(ctx, t, r.s.SignKey)
		for _, line := range report.Lines() {
			r.opts.Events.line(line)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// moduleLocator is how the module registry's documents locate packages:
// in the tree (nil), or with --oci-module-locations in the build's one
// OCI registry.
func (r *run) moduleLocator() (replica.ModuleLocator, error) {
	if !r.opts.OCIModuleLocations {
		return nil, nil
	}
	var regs []*endpoint.Destination
	for _, o := range r.outs {
		if o.Ref.Kind == endpoint.OCI {
			regs = append(regs, o)
		}
	}
	if len(regs) != 1 {
		return nil, inputerr.Wrap(fmt.Errorf("--oci-module-locations needs exactly one oci:// destination for the documents to point at, not %d", len(regs)))
	}
	store := regs[0].Registry
	return func(m addrs.Module, v addrs.Version, rec layout.ModuleRecord) (string, error) {
		return store.ModuleSource(m, rec.SHA256, rec.Size, rec.Subdir)
	}, nil
}

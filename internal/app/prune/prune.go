// Package prune is the prune command: it removes from a mirror (a
// directory or a bucket) the versions the manifest and configurations no
// longer select (package prune's plan and safety rules), then refreshes
// the views derived from the tree under the same lock.
package prune

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/prune"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/views"
	"github.com/tfmirror/tfmirror/layout"
)

// Options say what to prune.
type Options struct {
	// Out is the mirror.
	Out string
	// Dirs are configuration roots, besides the manifest's.
	Dirs []string
	// Vars are the --var and --var-file flags, in their order; NoTests
	// leaves out what only test files need (as for build).
	Vars    []app.VarArg
	NoTests bool
	// Platforms of the configurations' providers; none: the manifest's.
	Platforms    []string
	DryRun       bool
	Grace        time.Duration
	MaxDeletions int
	Flags        settings.Flags
	Process      settings.Process
}

// Report is what the prune did (or would do).
type Report = prune.Report

// Defaults of Options.Grace and Options.MaxDeletions.
const (
	DefaultGrace        = prune.DefaultGrace
	DefaultMaxDeletions = prune.DefaultMaxDeletions
)

// Run prunes. The report is set whenever part of the work was done.
func Run(ctx context.Context, opts Options) (*Report, error) {
	switch {
	case opts.Grace < 0:
		return nil, inputerr.Wrap(errors.New("--grace must not be negative"))
	case opts.MaxDeletions < 0:
		return nil, inputerr.Wrap(errors.New("--max-deletions must not be negative"))
	}
	ref, err := endpoint.Parse(opts.Out)
	if err != nil {
		return nil, err
	}
	_, s, in, err := app.LoadInputs(opts.Flags, opts.Process, opts.Dirs, opts.Platforms, app.Reading{Vars: opts.Vars, NoTests: opts.NoTests})
	if err != nil {
		return nil, err
	}
	started := app.Now(s)
	d, err := endpoint.OpenTree(ctx, ref, s)
	if err != nil {
		return nil, err
	}
	report, err := prune.Run(ctx, d.Store, prune.Options{
		Requirements: in.Requirements, Grace: opts.Grace, MaxDeletions: opts.MaxDeletions,
		LockTimeout: s.LockTimeout, DryRun: opts.DryRun, Now: s.Now,
		Record: func(ctx context.Context, tree *layout.Tree, r *prune.Report) error {
			ctx, cancel := app.Finishing(ctx) // what was pruned is recorded
			defer cancel()
			return app.RecordChanges(ctx, []*layout.Tree{tree}, app.PrunedChanges(pruned(r)), started, s, nil)
		},
		Refresh: func(ctx context.Context, tree *layout.Tree) error {
			_, err := views.Refresh(ctx, tree, views.Options{Trust: replica.Trust{Checker: signing.Checker{}, Policy: s.Trust}, Sign: s.SignKey})
			return err
		},
	})
	if report != nil {
		report.Warnings = append(in.Warnings, report.Warnings...)
	}
	return report, err
}

// pruned names the versions a prune unlisted or deleted, each once.
func pruned(r *prune.Report) []string {
	var out []string
	for _, v := range append(slices.Clone(r.Unlisted), r.Deleted...) {
		if !slices.Contains(out, v.String()) {
			out = append(out, v.String())
		}
	}
	return out
}

package cli

import (
	"context"

	appaudit "github.com/tfmirror/tfmirror/internal/app/audit"
	appbuild "github.com/tfmirror/tfmirror/internal/app/build"
	appbundle "github.com/tfmirror/tfmirror/internal/app/bundle"
	appcheck "github.com/tfmirror/tfmirror/internal/app/check"
	applock "github.com/tfmirror/tfmirror/internal/app/lock"
	appprune "github.com/tfmirror/tfmirror/internal/app/prune"
	appreplica "github.com/tfmirror/tfmirror/internal/app/replica"
	appserve "github.com/tfmirror/tfmirror/internal/app/serve"
	appverify "github.com/tfmirror/tfmirror/internal/app/verify"
)

// commands are the command layer's Run functions the CLI calls: the seam
// tests replace to check how flags become options without running a
// command.
type commands struct {
	build        func(context.Context, appbuild.Options) (*appbuild.Report, error)
	lock         func(context.Context, applock.Options) (*applock.Report, error)
	verify       func(context.Context, appverify.Options) (*appverify.Report, error)
	replica      func(context.Context, appreplica.Options) (*appreplica.Report, error)
	prune        func(context.Context, appprune.Options) (*appprune.Report, error)
	bundleCreate func(context.Context, appbundle.CreateOptions) (*appbundle.CreateReport, error)
	bundleImport func(context.Context, appbundle.ImportOptions) (*appbundle.ImportReport, error)
	serve        func(context.Context, appserve.Options) error
	check        func(context.Context, appcheck.Options) (*appcheck.Report, error)
	audit        func(context.Context, appaudit.Options) (*appaudit.Report, error)
}

// realCommands are the commands the CLI runs.
func realCommands() commands {
	return commands{
		build: appbuild.Run, lock: applock.Run, verify: appverify.Run, replica: appreplica.Run, prune: appprune.Run,
		bundleCreate: appbundle.Create, bundleImport: appbundle.Import, serve: appserve.Run, check: appcheck.Run, audit: appaudit.Run,
	}
}

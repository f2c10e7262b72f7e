// Package lock is the lock command: it writes the .terraform.lock.hcl of
// root modules from a built mirror, for every platform, without
// contacting the origin registries.
package lock

import (
	"context"
	"errors"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/mirror"
)

// Options say which lock files to write from which mirror.
type Options struct {
	// Mirror is the built mirror to read.
	Mirror string
	// Dirs are the root modules; none means the current directory.
	Dirs []string
	// Platforms to record hashes for; none means every platform the
	// mirror holds of each release.
	Platforms []string
	// Vars are the --var and --var-file flags, in their order: values of
	// the configurations' variables.
	Vars    []tfconfig.VarArg
	NoTests bool // leave out what only test files need
	Flags   settings.Flags
	Process settings.Process
}

// Report says what was written.
type Report struct {
	// Warnings are what reading the configurations warned about.
	Warnings []string
	Files    []app.LockFile
}

// Run writes the lock files: none unless every one can be computed.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.Mirror == "" {
		return nil, inputerr.Wrap(errors.New("--mirror is required: a mirror directory or https:// URL"))
	}
	platforms, err := app.ParsePlatforms(opts.Platforms)
	if err != nil {
		return nil, err
	}
	ref, _, s, err := app.Locate(opts.Mirror, opts.Flags, opts.Process)
	if err != nil {
		return nil, err
	}
	dirs := opts.Dirs
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	cfgs, err := tfconfig.LoadConfigurations(dirs, tfconfig.Options{Args: opts.Vars, Environ: opts.Process.Environ, NoTests: opts.NoTests})
	if err != nil {
		return nil, err
	}
	packages, hashed, err := endpoint.OpenUpstream(ctx, "network_mirror "+opts.Mirror, ref, s)
	if err != nil {
		return nil, err
	}
	report := &Report{Warnings: tfconfig.Warnings(cfgs)}
	locker := &mirror.Locker{Mirror: packages, Checker: signing.Checker{}, Trust: s.Trust, Hashed: hashed, Limits: s.ZipLimits}
	report.Files, err = app.WriteLockFiles(ctx, locker, cfgs, platforms)
	return report, err
}

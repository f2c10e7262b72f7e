// Package check is the check command: it validates a manifest and what it
// names on the local disk (configurations, client certificates, the CA
// file, destinations) without any network request, so a mistake is found
// before a build starts.
package check

import (
	"context"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/settings"
)

// Options say what to check.
type Options struct {
	// Dirs are configuration roots, besides the manifest's.
	Dirs []string
	// Vars are the --var and --var-file flags, in their order; NoTests
	// leaves out what only test files need (as for build).
	Vars    []app.VarArg
	NoTests bool
	Flags   settings.Flags
	Process settings.Process
}

// Report says what the manifest asks for.
type Report struct {
	Manifest       string
	Providers      int
	Modules        int
	Configurations int
	Platforms      []addrs.Platform
	// Destinations are the manifest's out list, or ./site.
	Destinations []string
	Warnings     []string
}

// Run checks the manifest. Every problem is an input error.
func Run(_ context.Context, opts Options) (*Report, error) {
	m, s, in, err := app.LoadInputs(opts.Flags, opts.Process, opts.Dirs, nil, app.Reading{Vars: opts.Vars, NoTests: opts.NoTests})
	if err != nil {
		return nil, err
	}
	if err := endpoint.Check(s); err != nil {
		return nil, err
	}
	r := &Report{Manifest: opts.Flags.Config, Modules: len(in.Modules), Configurations: len(in.Configurations), Platforms: m.Platforms, Destinations: m.Outs, Warnings: in.Warnings}
	seen := map[string]bool{}
	for _, req := range in.Requirements {
		if !seen[req.Provider.String()] {
			seen[req.Provider.String()] = true
			r.Providers++
		}
	}
	if len(r.Destinations) == 0 {
		r.Destinations = []string{"site"}
	}
	return r, nil
}

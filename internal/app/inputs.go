package app

import (
	"errors"
	"slices"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/mirror"
)

// Inputs are what a mirror is asked to hold: the manifest's provider and
// module blocks and what every configuration root needs. Build mirrors
// them; prune keeps what they select.
type Inputs struct {
	Configurations []tfconfig.Configuration
	Requirements   []mirror.Requirement
	Modules        []mirror.ModuleRequirement
	// Platforms are the configurations' providers' platforms.
	Platforms []addrs.Platform
	// Warnings are what reading the configurations warned about (a
	// remote module that is not installed, whose providers are then
	// missing).
	Warnings []string
}

// VarArg is one --var NAME=VALUE or --var-file FILE flag.
type VarArg = tfconfig.VarArg

// Reading says how configurations are read.
type Reading struct {
	// NoModules leaves modules out: the manifest's module blocks and the
	// configurations' module calls.
	NoModules bool
	// Vars are the --var and --var-file flags, in their order; the
	// process environment's TF_VAR_ values come before them.
	Vars []tfconfig.VarArg
	// NoTests leaves out the providers and modules only the
	// configurations' test files need.
	NoTests bool
}

// LoadInputs reads the manifest the flags name, builds the settings and
// gathers the inputs of the manifest and of dirs, for the platforms given
// as --platform values (none: the manifest's). A missing default manifest
// is fine when dirs name configurations.
func LoadInputs(f settings.Flags, p settings.Process, dirs, platforms []string, r Reading) (*config.Manifest, settings.Settings, Inputs, error) {
	plats, err := ParsePlatforms(platforms)
	if err != nil {
		return nil, settings.Settings{}, Inputs{}, err
	}
	m, s, err := config.Resolve(f, p, len(dirs) > 0)
	if err != nil {
		return nil, settings.Settings{}, Inputs{}, err
	}
	in, err := ReadInputs(m, dirs, plats, r, p.Environ)
	return m, s, in, err
}

// ReadInputs gathers the requirements of the manifest and of every
// configuration root: those of its configuration blocks and dirs, for
// platforms (none: the manifest's), which then replace the platforms of
// the manifest's provider blocks too, read as r says, with the
// environment environ (TF_VAR_ values). It contacts no registry.
func ReadInputs(m *config.Manifest, dirs []string, platforms []addrs.Platform, r Reading, environ []string) (Inputs, error) {
	noModules := r.NoModules
	dirs = append(slices.Clone(m.Configurations), dirs...)
	if len(dirs) == 0 && len(m.Requirements) == 0 && (len(m.Modules) == 0 || noModules) {
		return Inputs{}, inputerr.Wrap(errors.New("nothing to mirror: add provider, module or configuration blocks to the manifest, or name configuration directories"))
	}
	in := Inputs{Requirements: slices.Clone(m.Requirements)}
	if len(platforms) > 0 {
		// --platform replaces the manifest's platforms for every provider
		// the build mirrors, as tofu providers mirror -platform does.
		for i := range in.Requirements {
			in.Requirements[i].Platforms = platforms
		}
	}
	if !noModules {
		in.Modules = slices.Clone(m.Modules)
	}
	if len(dirs) == 0 {
		return in, nil
	}
	// The configurations are read first: what is wrong in them is said
	// even when the platforms are missing too.
	cfgs, err := tfconfig.LoadConfigurations(dirs, tfconfig.Options{Args: r.Vars, Environ: environ, NoTests: r.NoTests})
	if err != nil {
		return Inputs{}, err
	}
	in.Platforms = platforms
	if len(in.Platforms) == 0 {
		in.Platforms = m.Platforms
	}
	if len(in.Platforms) == 0 {
		return Inputs{}, inputerr.Wrap(errors.New("no platforms for the configurations: pass --platform os_arch or set platforms in the manifest"))
	}
	more, err := tfconfig.Requirements(cfgs, in.Platforms)
	if err != nil {
		return Inputs{}, err
	}
	for i := range more {
		more[i].MinAge = m.MinAge
	}
	in.Configurations, in.Requirements = cfgs, append(in.Requirements, more...)
	in.Warnings = tfconfig.Warnings(cfgs)
	if !noModules {
		for _, r := range tfconfig.ModuleRequirements(cfgs) {
			r.MinAge = m.MinAge
			in.Modules = append(in.Modules, r)
		}
	}
	return in, nil
}

// Locate parses the location a command works on and builds the settings
// it runs with (a missing default manifest is an empty one).
func Locate(location string, f settings.Flags, p settings.Process) (endpoint.Ref, *config.Manifest, settings.Settings, error) {
	ref, err := endpoint.Parse(location)
	if err != nil {
		return endpoint.Ref{}, nil, settings.Settings{}, err
	}
	m, s, err := config.Resolve(f, p, true)
	return ref, m, s, err
}

// ManifestProviders are the providers the manifest's provider blocks
// name: what verify and audit read from a registry, which cannot list its
// repositories.
func ManifestProviders(m *config.Manifest) []addrs.Provider {
	var out []addrs.Provider
	for _, req := range m.Requirements {
		if !slices.ContainsFunc(out, req.Provider.Equals) {
			out = append(out, req.Provider)
		}
	}
	return out
}

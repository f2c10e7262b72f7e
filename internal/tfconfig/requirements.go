package tfconfig

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/mirror"
)

// Configuration is one root module as a mirror sees it: the providers it
// needs (with the versions its lock file pins), the registry modules it
// calls, and its lock file.
type Configuration struct {
	Dir      string
	Needs    []mirror.Need
	Lock     *lockfile.File
	Warnings []string
	// Modules are the registry modules the configuration calls: one
	// requirement per constraint written, each for the newest match, as
	// "tofu init" selects a version per call.
	Modules []mirror.ModuleRequirement
}

// LoadConfigurations reads every root module and its lock file, each with
// its variables' values from opts and its own variables files (LoadWith).
// Any problem is bad input: all of them are reported together, as one
// input error.
func LoadConfigurations(dirs []string, opts Options) ([]Configuration, error) {
	var out []Configuration
	var errs []error
	for _, dir := range dirs {
		c, err := loadConfiguration(dir, opts)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, inputerr.Wrap(err)
	}
	return out, nil
}

func loadConfiguration(dir string, opts Options) (Configuration, error) {
	cfg, err := LoadWith(dir, opts)
	if err != nil {
		return Configuration{}, fmt.Errorf("read configuration %s: %w", dir, err)
	}
	lock, err := lockfile.Read(filepath.Join(dir, lockfile.FileName))
	if err != nil {
		return Configuration{}, fmt.Errorf("read lock file of %s: %w", dir, err)
	}
	c := Configuration{Dir: dir, Lock: lock, Warnings: cfg.Warnings, Modules: ModuleRequirementsOf(cfg.Modules)}
	providers := cfg.Providers
	if opts.Terraform {
		providers = terraformAddresses(cfg)
	}
	var errs []error
	for _, p := range sortedProviders(providers) {
		n := mirror.Need{Provider: p, Root: dir, ImpliedHost: cfg.ImpliedHost[p] || opts.Terraform && p.Hostname == addrs.TerraformRegistryHost && cfg.ImpliedHost[openTofuAddress(p)]}
		for _, con := range providers[p] {
			n.Constraints = append(n.Constraints, con.Text)
		}
		if err := allowsSome(p, providers[p]); err != nil {
			errs = append(errs, fmt.Errorf("configuration %s: %w", dir, err))
		}
		if v, as, ok := lockedVersion(lock, p, opts.Terraform); ok {
			n.Locked = &v
			if !as.Equals(p) {
				n.LockedAs = as
			}
		}
		c.Needs = append(c.Needs, n)
	}
	return c, errors.Join(errs...)
}

// terraformAddresses are the configuration's providers as Terraform reads
// their addresses: one named without a host is registry.terraform.io's
// (the configuration's constraints on both addresses together, when it
// also names that one with its host).
func terraformAddresses(cfg *Root) map[addrs.Provider][]Constraint {
	out := make(map[addrs.Provider][]Constraint, len(cfg.Providers))
	for p, cons := range cfg.Providers {
		if cfg.ImpliedHost[p] && p.Hostname == addrs.DefaultRegistryHost {
			p = addrs.Provider{Hostname: addrs.TerraformRegistryHost, Namespace: p.Namespace, Type: p.Type}
		}
		out[p] = append(out[p], cons...)
	}
	return out
}

// openTofuAddress is the address OpenTofu reads where Terraform reads p.
func openTofuAddress(p addrs.Provider) addrs.Provider {
	return addrs.Provider{Hostname: addrs.DefaultRegistryHost, Namespace: p.Namespace, Type: p.Type}
}

// lockedVersion is the version the lock file pins for p, and the provider
// it pins it under. OpenTofu also takes the lock of
// registry.terraform.io/hashicorp/TYPE, a file Terraform wrote, for
// registry.opentofu.org/hashicorp/TYPE when the file has no lock of its
// own for it (its "predecessor registry" shim: the version kept, the
// hashes not); Terraform does not.
func lockedVersion(lock *lockfile.File, p addrs.Provider, terraform bool) (addrs.Version, addrs.Provider, bool) {
	if l, ok := lock.Locks[p]; ok {
		return l.Version, p, true
	}
	if terraform || p.Hostname != addrs.DefaultRegistryHost || p.Namespace != "hashicorp" {
		return addrs.Version{}, addrs.Provider{}, false
	}
	as := addrs.Provider{Hostname: addrs.TerraformRegistryHost, Namespace: p.Namespace, Type: p.Type}
	l, ok := lock.Locks[as]
	if !ok {
		return addrs.Version{}, addrs.Provider{}, false
	}
	return l.Version, as, true
}

// allowsSome reports the constraints on provider p, with where each is
// written, when together they allow no version: "tofu init" would find no
// release for them.
func allowsSome(p addrs.Provider, cons []Constraint) error {
	var texts, where []string
	for _, c := range cons {
		// A module called twice writes its constraint once.
		if w := fmt.Sprintf("%q (%s)", c.Text, c.Pos); c.Text != "" && !slices.Contains(where, w) {
			texts, where = append(texts, c.Text), append(where, w)
		}
	}
	if !addrs.AllowsNone(strings.Join(texts, ", ")) {
		return nil
	}
	what := "its version constraint " + where[0] + " allows"
	if len(where) > 1 {
		what = "its version constraints " + strings.Join(where, ", ") + " together allow"
	}
	return fmt.Errorf("provider %s: %s no version; \"tofu init\" would find no release for it either", p, what)
}

func sortedProviders[V any](m map[addrs.Provider]V) []addrs.Provider {
	out := make([]addrs.Provider, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b addrs.Provider) int {
		switch {
		case a.LessThan(b):
			return -1
		case b.LessThan(a):
			return 1
		}
		return 0
	})
	return out
}

// Requirements turns configurations into what to mirror for platforms.
func Requirements(cfgs []Configuration, platforms []addrs.Platform) ([]mirror.Requirement, error) {
	var reqs []mirror.Requirement
	var errs []error
	for _, c := range cfgs {
		for _, n := range c.Needs {
			req, err := n.Requirement(platforms)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			reqs = append(reqs, req)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, inputerr.Wrap(err)
	}
	return reqs, nil
}

// ModuleRequirements gathers the module requirements of every
// configuration.
func ModuleRequirements(cfgs []Configuration) []mirror.ModuleRequirement {
	var out []mirror.ModuleRequirement
	for _, c := range cfgs {
		out = append(out, c.Modules...)
	}
	return out
}

// Warnings says what reading the configurations warned about, each
// naming its configuration.
func Warnings(cfgs []Configuration) []string {
	var out []string
	for _, c := range cfgs {
		for _, w := range c.Warnings {
			out = append(out, c.Dir+": "+strings.TrimSpace(w))
		}
	}
	return out
}

// ModuleRequirementsOf turns a configuration's registry module calls into
// requirements, in address order.
func ModuleRequirementsOf(calls map[addrs.Module][]Constraint) []mirror.ModuleRequirement {
	mods := slices.SortedFunc(maps.Keys(calls), func(a, b addrs.Module) int { return strings.Compare(a.String(), b.String()) })
	var out []mirror.ModuleRequirement
	for _, m := range mods {
		if len(calls[m]) == 0 {
			out = append(out, mirror.ModuleRequirement{Module: m, Newest: 1})
		}
		for _, c := range calls[m] {
			out = append(out, mirror.ModuleRequirement{Module: m, Constraint: c.Text, Newest: 1, From: c.Pos})
		}
	}
	return out
}

// CallReader reads a fetched module's registry module calls, for
// transitive mirroring (mirror.ModuleCallReader).
type CallReader struct{}

// ModuleCalls implements mirror.ModuleCallReader: one requirement per
// constraint written, each for the newest match, as "tofu init" selects.
func (CallReader) ModuleCalls(root, subdir string) ([]mirror.ModuleRequirement, []string, error) {
	calls, warnings, err := ModuleCalls(root, subdir)
	if err != nil {
		return nil, nil, err
	}
	return ModuleRequirementsOf(calls), warnings, nil
}

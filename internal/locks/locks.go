// Package locks is the lock-file use case: it reads root modules and their
// .terraform.lock.hcl files, turns what they need into mirror requirements,
// computes each root's new lock file from a built mirror (through
// mirror.Locker, which decides trust), and writes them only when every one
// could be computed.
//
// It does not select versions or check signatures itself (package mirror
// does), nor parse HCL (tfconfig and lockfile do), nor print.
package locks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/mirror"
)

// FileName is where OpenTofu keeps a root module's dependency locks.
const FileName = ".terraform.lock.hcl"

// InputError marks input that cannot be used as given: a configuration or
// lock file that does not parse.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Root is one configuration root: what it needs and its lock file.
type Root struct {
	Dir      string
	Needs    []mirror.Need
	Lock     *lockfile.File
	Warnings []string
	// Modules are the registry modules the configuration calls: one
	// requirement per constraint written, each for the newest match, as
	// "tofu init" selects a version per call.
	Modules []mirror.ModuleRequirement
}

// LoadRoots reads every root module and its lock file. Any problem is bad
// input: all of them are reported together in one *InputError.
func LoadRoots(dirs []string) ([]Root, error) {
	var roots []Root
	var errs []error
	for _, dir := range dirs {
		r, err := loadRoot(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		roots = append(roots, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &InputError{err}
	}
	return roots, nil
}

func loadRoot(dir string) (Root, error) {
	cfg, err := tfconfig.Load(dir)
	if err != nil {
		return Root{}, fmt.Errorf("read configuration %s: %w", dir, err)
	}
	lock, err := lockfile.Read(filepath.Join(dir, FileName))
	if err != nil {
		return Root{}, fmt.Errorf("read lock file of %s: %w", dir, err)
	}
	r := Root{Dir: dir, Lock: lock, Warnings: cfg.Warnings, Modules: ModuleRequirementsOf(cfg.Modules)}
	for _, p := range sortedProviders(cfg.Providers) {
		n := mirror.Need{Provider: p, Root: dir}
		for _, c := range cfg.Providers[p] {
			n.Constraints = append(n.Constraints, c.Text)
		}
		if l, ok := lock.Locks[p]; ok {
			v := l.Version
			n.Locked = &v
		}
		r.Needs = append(r.Needs, n)
	}
	return r, nil
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

// Requirements turns roots into what to mirror for platforms.
func Requirements(roots []Root, platforms []addrs.Platform) ([]mirror.Requirement, error) {
	var reqs []mirror.Requirement
	var errs []error
	for _, r := range roots {
		for _, n := range r.Needs {
			req, err := n.Requirement(platforms)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			reqs = append(reqs, req)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, &InputError{err}
	}
	return reqs, nil
}

// Update is a lock file computed for one root, ready to write.
type Update struct {
	path string
	file *lockfile.File
	same bool // the file on disk already says exactly this
}

// Compute works out every root's new lock file without writing any:
// the providers the configuration needs (others are dropped, as tofu does),
// each at the version it would install from the mirror, with the hashes of
// the requested platforms; an unchanged version keeps its old hashes too.
func Compute(ctx context.Context, l *mirror.Locker, roots []Root, platforms []addrs.Platform) ([]Update, error) {
	var out []Update
	var errs []error
	for _, r := range roots {
		u, err := computeLock(ctx, l, r, platforms)
		if err != nil {
			errs = append(errs, err) // each names its root
			continue
		}
		out = append(out, u)
	}
	return out, errors.Join(errs...)
}

func computeLock(ctx context.Context, l *mirror.Locker, r Root, platforms []addrs.Platform) (Update, error) {
	file := &lockfile.File{Locks: map[addrs.Provider]*lockfile.Lock{}}
	var errs []error
	for _, n := range r.Needs {
		entry, err := l.Lock(ctx, n, platforms)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		constraints, err := addrs.NormalizeConstraints(n.Constraints)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", r.Dir, n.Provider, err))
			continue
		}
		hashes := entry.Hashes
		if old, ok := r.Lock.Locks[n.Provider]; ok && old.Version.Same(entry.Version) {
			hashes = append(slices.Clone(old.Hashes), hashes...)
		}
		file.Locks[n.Provider] = &lockfile.Lock{Provider: n.Provider, Version: entry.Version, Constraints: constraints, Hashes: hashes}
	}
	if err := errors.Join(errs...); err != nil {
		return Update{}, err
	}
	path := filepath.Join(r.Dir, FileName)
	onDisk, err := os.ReadFile(path)
	return Update{path: path, file: file, same: err == nil && bytes.Equal(onDisk, file.Bytes())}, nil
}

// Write writes computed lock files and says what it did.
func Write(updates []Update, report func(string)) error {
	for _, u := range updates {
		if u.same {
			report("unchanged " + u.path)
			continue
		}
		if err := lockfile.Write(u.path, u.file); err != nil {
			return err
		}
		report(fmt.Sprintf("wrote     %s (%d providers)", u.path, len(u.file.Locks)))
	}
	return nil
}

// Warn says what reading the configurations warned about.
func Warn(roots []Root, report func(string)) {
	for _, r := range roots {
		for _, w := range r.Warnings {
			report("warning: " + r.Dir + ": " + strings.TrimSpace(w))
		}
	}
}

// ModuleRequirementsOf turns a configuration's registry module calls into
// requirements, in address order.
func ModuleRequirementsOf(calls map[addrs.Module][]tfconfig.Constraint) []mirror.ModuleRequirement {
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

// ModuleRequirements gathers the module requirements of every root.
func ModuleRequirements(roots []Root) []mirror.ModuleRequirement {
	var out []mirror.ModuleRequirement
	for _, r := range roots {
		out = append(out, r.Modules...)
	}
	return out
}

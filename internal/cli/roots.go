package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/mirror"
)

// lockFileName is where OpenTofu keeps a root module's dependency locks.
const lockFileName = ".terraform.lock.hcl"

// rootModule is one configuration root: what it needs and its lock file.
type rootModule struct {
	dir      string
	needs    []mirror.Need
	lock     *lockfile.File
	warnings []string
}

// loadRoots reads every root module and its lock file. Any problem is bad
// input: all of them are reported together as a usage error.
func loadRoots(dirs []string) ([]rootModule, error) {
	var roots []rootModule
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
		return nil, usageError{err}
	}
	return roots, nil
}

func loadRoot(dir string) (rootModule, error) {
	cfg, err := tfconfig.Load(dir)
	if err != nil {
		return rootModule{}, fmt.Errorf("read configuration %s: %w", dir, err)
	}
	lock, err := lockfile.Read(filepath.Join(dir, lockFileName))
	if err != nil {
		return rootModule{}, fmt.Errorf("read lock file of %s: %w", dir, err)
	}
	r := rootModule{dir: dir, lock: lock, warnings: cfg.Warnings}
	for _, p := range sortedProviders(cfg.Providers) {
		n := mirror.Need{Provider: p, Root: dir}
		for _, c := range cfg.Providers[p] {
			n.Constraints = append(n.Constraints, c.Text)
		}
		if l, ok := lock.Locks[p]; ok {
			v := l.Version
			n.Locked = &v
		}
		r.needs = append(r.needs, n)
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

// requirements turns roots into what to mirror for platforms.
func requirements(roots []rootModule, platforms []addrs.Platform) ([]mirror.Requirement, error) {
	var reqs []mirror.Requirement
	var errs []error
	for _, r := range roots {
		for _, n := range r.needs {
			req, err := n.Requirement(platforms)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			reqs = append(reqs, req)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, usageError{err}
	}
	return reqs, nil
}

// lockUpdate is a lock file computed for one root, ready to write.
type lockUpdate struct {
	path string
	file *lockfile.File
	same bool // the file on disk already says exactly this
}

// computeLocks works out every root's new lock file without writing any:
// the providers the configuration needs (others are dropped, as tofu does),
// each at the version it would install from the mirror, with the hashes of
// the requested platforms; an unchanged version keeps its old hashes too.
func computeLocks(ctx context.Context, l *mirror.Locker, roots []rootModule, platforms []addrs.Platform) ([]lockUpdate, error) {
	var out []lockUpdate
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

func computeLock(ctx context.Context, l *mirror.Locker, r rootModule, platforms []addrs.Platform) (lockUpdate, error) {
	file := &lockfile.File{Locks: map[addrs.Provider]*lockfile.Lock{}}
	var errs []error
	for _, n := range r.needs {
		entry, err := l.Lock(ctx, n, platforms)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		constraints, err := lockfile.NormalizeConstraints(n.Constraints)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", r.dir, n.Provider, err))
			continue
		}
		hashes := entry.Hashes
		if old, ok := r.lock.Locks[n.Provider]; ok && old.Version.Same(entry.Version) {
			hashes = append(slices.Clone(old.Hashes), hashes...)
		}
		file.Locks[n.Provider] = &lockfile.Lock{Provider: n.Provider, Version: entry.Version, Constraints: constraints, Hashes: hashes}
	}
	if err := errors.Join(errs...); err != nil {
		return lockUpdate{}, err
	}
	path := filepath.Join(r.dir, lockFileName)
	onDisk, err := os.ReadFile(path)
	return lockUpdate{path: path, file: file, same: err == nil && bytes.Equal(onDisk, file.Bytes())}, nil
}

// writeLocks writes computed lock files and says what it did.
func writeLocks(updates []lockUpdate, report func(string)) error {
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

// warnRoots prints what reading the configurations warned about.
func warnRoots(roots []rootModule, report func(string)) {
	for _, r := range roots {
		for _, w := range r.warnings {
			report("warning: " + r.dir + ": " + strings.TrimSpace(w))
		}
	}
}

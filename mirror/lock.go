package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// LockEntry is what a lock file records for one provider.
type LockEntry struct {
	Provider addrs.Provider
	Version  addrs.Version
	Hashes   []hashing.Hash
}

// Locker computes lock file entries from a built mirror, offline from the
// origin: it re-authenticates the kept SHA256SUMS, signature and keys
// under the trust policy (the build's decision), then records the h1: of
// every requested platform's unpacked package and a zh: for every line of
// SHA256SUMS, exactly the hashes "tofu providers lock" records from the
// origin.
type Locker struct {
	Mirror  *layout.Tree
	Checker SignatureChecker
	Trust   TrustPolicy
}

// Lock selects the version a root module would install from the mirror
// (the locked one, else the newest allowed) and returns its lock entry. An
// empty platforms list means every platform the mirror holds for it.
func (l *Locker) Lock(ctx context.Context, n Need, platforms []addrs.Platform) (LockEntry, error) {
	v, err := l.selectVersion(ctx, n)
	if err != nil {
		return LockEntry{}, err
	}
	rec, err := l.Mirror.ReadRecord(ctx, n.Provider, v)
	if err != nil {
		return LockEntry{}, fmt.Errorf("%s: %s %s: %w", n.Root, n.Provider, v, err)
	}
	sums, err := l.verify(n.Provider, v, rec)
	if err != nil {
		return LockEntry{}, err
	}
	hashes, err := platformHashes(n.Provider, v, rec.Provenance, platforms)
	if err != nil {
		return LockEntry{}, &ResolveError{Provider: n.Provider, Input: true, Err: fmt.Errorf("%s: %w", n.Root, err)}
	}
	hashes = append(hashes, sums.ZHashes()...)
	slices.Sort(hashes)
	return LockEntry{Provider: n.Provider, Version: v, Hashes: slices.Compact(hashes)}, nil
}

// selectVersion picks what "tofu init" would install from the mirror.
// Asking for something the mirror cannot satisfy is an input error.
func (l *Locker) selectVersion(ctx context.Context, n Need) (addrs.Version, error) {
	inputErr := func(format string, args ...any) error {
		return &ResolveError{Provider: n.Provider, Input: true, Err: fmt.Errorf("%s: "+format, append([]any{n.Root}, args...)...)}
	}
	allowed, err := addrs.ParseConstraints(strings.Join(n.Constraints, ", "))
	if err != nil {
		return addrs.Version{}, inputErr("%w", err)
	}
	available, err := l.Mirror.Versions(ctx, n.Provider)
	if errors.Is(err, layout.ErrNotInMirror) {
		return addrs.Version{}, inputErr("%w", err)
	}
	if err != nil {
		return addrs.Version{}, fmt.Errorf("%s: %w", n.Root, err)
	}
	constraints := strings.Join(n.Constraints, ", ")
	if n.Locked != nil {
		if !allowed.Has(*n.Locked) {
			return addrs.Version{}, inputErr("the lock file pins %s %s, which does not satisfy the configuration's constraints %q; run \"tofu init -upgrade\" or fix the constraints", n.Provider, n.Locked, constraints)
		}
		if !slices.ContainsFunc(available, n.Locked.Same) {
			return addrs.Version{}, inputErr("the lock file pins %s %s, which the mirror does not hold", n.Provider, n.Locked)
		}
		return *n.Locked, nil
	}
	matched := slices.Clone(available).Filter(allowed)
	if len(matched) == 0 {
		return addrs.Version{}, inputErr("the mirror holds no version of %s that matches %q (newest held: %s)", n.Provider, constraints, slices.Clone(available).Newest())
	}
	return matched.Newest(), nil
}

// verify re-authenticates the kept SHA256SUMS under the trust policy.
func (l *Locker) verify(p addrs.Provider, v addrs.Version, rec layout.Record) (hashing.Sums, error) {
	verdict, err := l.Trust.Authenticate(l.Checker, Package{Provider: p, Version: v}, keptEvidence(rec))
	return verdict.Sums, err
}

// platformHashes returns the unpacked h1: of each platform, all of them
// when platforms is empty.
func platformHashes(p addrs.Provider, v addrs.Version, prov layout.Provenance, platforms []addrs.Platform) ([]hashing.Hash, error) {
	names := make([]string, 0, len(platforms))
	for _, plat := range platforms {
		names = append(names, plat.String())
	}
	if len(names) == 0 {
		for name := range prov.Archives {
			names = append(names, name)
		}
		sort.Strings(names)
	}
	var out []hashing.Hash
	for _, name := range names {
		a, ok := prov.Archives[name]
		if !ok {
			return nil, fmt.Errorf("%s %s: the mirror has no %s package", p, v, name)
		}
		out = append(out, a.H1)
	}
	return out, nil
}

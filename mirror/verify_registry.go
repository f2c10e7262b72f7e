package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// RegistryMirror is a registry (OCI) as verify reads it.
type RegistryMirror interface {
	Packages
	// Platforms lists the packages a version's tag names, as OpenTofu
	// reads them: per platform the zh: hash of its archive. A tag that
	// is not what OpenTofu reads is an error.
	Platforms(ctx context.Context, p addrs.Provider, v addrs.Version) (map[addrs.Platform]hashing.Hash, error)
	// Name is where a version lives, for messages: repository:tag.
	Name(p addrs.Provider, v addrs.Version) string
}

// RegistryVerifier checks every version a registry holds of the given
// providers (a registry need not list its repositories): each tag's index
// and manifests, every archive against its digest, and the kept
// SHA256SUMS, signature and keys under the trust policy, which must list
// each archive. A version without the provenance tfmirror pushes next to
// it is a problem: it was not pushed by tfmirror, or its tag was
// re-pointed.
type RegistryVerifier struct {
	Registry  RegistryMirror
	Providers []addrs.Provider
	Checker   SignatureChecker
	Trust     TrustPolicy
	Limits    hashing.ZipLimits
	TempDir   string
}

// Verify checks the registry; problems are collected in the report.
func (v *RegistryVerifier) Verify(ctx context.Context) (*VerifyReport, error) {
	r := &VerifyReport{}
	base := &Verifier{Checker: v.Checker, Trust: v.Trust}
	for _, p := range v.Providers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.Providers++
		versions, err := v.Registry.Versions(ctx, p)
		if errors.Is(err, layout.ErrNotInMirror) {
			r.problem(p.String(), "%v", err)
			continue
		}
		if err != nil {
			// Not a problem of the mirror: the registry cannot be read
			// (down, credentials refused).
			return nil, fmt.Errorf("list the versions of %s: %w", p, err)
		}
		for _, ver := range versions {
			r.Versions++
			v.verifyVersion(ctx, r, base, p, ver)
		}
	}
	return r, nil
}

func (v *RegistryVerifier) verifyVersion(ctx context.Context, r *VerifyReport, base *Verifier, p addrs.Provider, ver addrs.Version) {
	name := v.Registry.Name(p, ver)
	plats, err := v.Registry.Platforms(ctx, p, ver)
	if err != nil {
		r.problem(name, "%v", err)
		return
	}
	rec, recErr := v.Registry.ReadRecord(ctx, p, ver)
	var sums hashing.Sums
	if recErr != nil {
		r.problem(name, "no provenance next to the index, so nothing ties its packages to the origin's signature: %v", recErr)
	} else {
		sums = base.verifyRecord(r, p, ver, rec, recordPaths{name, name, name})
	}
	for _, plat := range slices.SortedFunc(maps.Keys(plats), func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) }) {
		r.Archives++
		pkg := Package{Provider: p, Version: ver, Platform: plat}
		computed, err := archiveSums(ctx, v.Registry, pkg, v.Limits, v.TempDir)
		if errors.Is(err, errMissing) {
			err = fmt.Errorf("the index names it, but the registry does not hold it")
		}
		if err != nil {
			r.problem(name, "%s archive: %v", plat, err)
			continue
		}
		if computed.ZH != plats[plat] {
			r.problem(name, "%s: the manifest names %s, the archive is %s", plat, plats[plat], computed.ZH)
			continue
		}
		if recErr == nil {
			base.checkProvenance(r, name, plat.String(), rec.Provenance, sums, computed)
		}
	}
}

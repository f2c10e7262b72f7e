package mirror

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/layout"
)

// Problem is one thing wrong with a mirror, at a path relative to its root
// (or a registry's repository:tag).
type Problem = layout.Problem

// VerifyReport is the outcome of a verification.
type VerifyReport struct {
	Problems []Problem
	Warnings []Problem
	// Accepted are releases the trust policy accepts with a warning (an
	// expired key, an unsigned release where that is allowed): not a
	// problem of the mirror, but what a stricter policy would refuse.
	Accepted  []Problem
	Providers int
	Versions  int
	Archives  int
	// Modules and ModuleVersions count the module packages checked.
	Modules        int
	ModuleVersions int
}

// Listed is a mirror as verify reads it: what it tells clients (a tree's
// documents, a registry's tags and manifests) and what it keeps of each
// release's origin. A tree (a directory, a URL, a bucket) and a registry
// (an OCI registry or image layout) both are.
type Listed interface {
	Packages
	// ListVersions returns the versions a provider's listing names, with
	// what is wrong with the listing; the error is for a mirror that
	// cannot be read at all (down, credentials refused). A provider the
	// mirror does not hold is a problem, not an error.
	ListVersions(ctx context.Context, p addrs.Provider) ([]addrs.Version, []Problem, error)
	// ListVersion returns what clients are told about one version.
	ListVersion(ctx context.Context, p addrs.Provider, v addrs.Version) layout.Listing
}

// providerLister is a mirror that can say which providers it holds (a
// tree, from its catalog); a registry cannot.
type providerLister interface {
	Providers(ctx context.Context) ([]addrs.Provider, error)
}

// Verifier checks every provider, version and archive of a mirror the way
// clients see it, and re-authenticates what it keeps of each release's
// origin under the trust policy: one verifier, whatever the mirror. A
// release that keeps no provenance is judged by the same policy as an
// upstream that vouches with hashes alone: accepted with a warning, or a
// problem where the policy requires signatures.
type Verifier struct {
	Mirror Listed
	// Providers are the providers to check; none means every provider the
	// mirror lists (a registry cannot list them: name them).
	Providers []addrs.Provider
	Checker   SignatureChecker
	Trust     TrustPolicy
	// Limits bound what a provider package may unpack to (zero fields:
	// hashing.DefaultZipLimits').
	Limits hashing.ZipLimits
	// ModuleLimits bound what a module package may unpack to (zero
	// fields: hashing.DefaultModuleLimits'): the limits a build packs
	// modules under, whatever Limits are.
	ModuleLimits hashing.ModuleLimits
	// TempDir holds archives while they are hashed; "" means os.TempDir.
	TempDir string
	// CheckSBOM, if set, checks the SBOM a package's provenance names is
	// well-formed and describes it; without it, only that it is there.
	CheckSBOM SBOMChecker
	// Held, if set, is where the releases the mirror's are compared with
	// are kept besides the mirror's own older ones (the destination of a
	// bundle import): each release's signer is compared, as a build
	// compares a new release's, with the keys that signed those and the
	// mirror's releases of lower versions, under the trust policy.
	Held HeldSigners
}

// HeldSigners is where releases are kept whose signers a mirror's
// releases are compared with (Verifier.Held): a mirror tree.
type HeldSigners interface {
	signerLister
	Location() string
}

// SBOMChecker checks a package's SBOM (data) against the provenance entry
// that names it and the program verify read from the archive: the
// command layer's, which knows the format.
type SBOMChecker func(pkg Package, entry layout.ProvenanceArchive, data []byte, program hashing.Program) error

// Verify checks the mirror. Problems are collected, not returned as
// errors; the error is only for failing to start (no provider list) or a
// mirror that cannot be read.
func (v *Verifier) Verify(ctx context.Context) (*VerifyReport, error) {
	providers, err := v.providers(ctx)
	if err != nil {
		return nil, err
	}
	r := &VerifyReport{}
	for _, p := range providers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.Providers++
		if err := v.verifyProvider(ctx, r, p); err != nil {
			return nil, err
		}
	}
	if err := v.verifyModules(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

func (v *Verifier) providers(ctx context.Context) ([]addrs.Provider, error) {
	if len(v.Providers) > 0 {
		return v.Providers, nil
	}
	lister, ok := v.Mirror.(providerLister)
	if !ok {
		return nil, fmt.Errorf("%s cannot be asked which providers it holds: name the providers to check", v.Mirror.Location())
	}
	providers, err := lister.Providers(ctx)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	return providers, nil
}

func (r *VerifyReport) problem(path, format string, args ...any) {
	r.Problems = append(r.Problems, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (r *VerifyReport) warn(path, format string, args ...any) {
	r.Warnings = append(r.Warnings, Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *Verifier) verifyProvider(ctx context.Context, r *VerifyReport, p addrs.Provider) error {
	versions, problems, err := v.Mirror.ListVersions(ctx, p)
	if errors.Is(err, layout.ErrNotRegular) {
		// A link or a device where the provider's files are: the tree's
		// fault, not a failure to read it.
		r.problem(p.String(), "its versions cannot be listed: %v", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the versions of %s: %w", p, err)
	}
	r.Problems = append(r.Problems, problems...)
	history, err := v.heldHistory(ctx, p)
	if err != nil {
		return err
	}
	// Lowest first: each release is compared with those below it, as the
	// builds that added them in turn compared them.
	for _, ver := range slices.SortedFunc(slices.Values(versions), addrs.CompareVersions) {
		r.Versions++
		signer := v.verifyVersion(ctx, r, p, ver, history)
		if signer.KeyID != "" {
			history.Releases = append(history.Releases, SignedRelease{Version: ver, Signer: signer})
		}
	}
	return nil
}

// heldHistory is the key history of p's releases Held keeps.
func (v *Verifier) heldHistory(ctx context.Context, p addrs.Provider) (*KeyHistory, error) {
	h := &KeyHistory{}
	if v.Held == nil {
		return h, nil
	}
	signers, err := v.Held.Signers(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("read the signing keys of the releases of %s that %s holds: %w", p, v.Held.Location(), err)
	}
	for _, s := range signers {
		h.Releases = append(h.Releases, SignedRelease{Version: s.Version, Signer: Signer{KeyID: s.KeyID, Fingerprint: s.Fingerprint, Created: s.Created, Expires: s.Expires}})
	}
	return h, nil
}

// verifyVersion checks one release, its signer compared with history, and
// returns the signer (zero when it has none, or its evidence fails).
func (v *Verifier) verifyVersion(ctx context.Context, r *VerifyReport, p addrs.Provider, ver addrs.Version, history *KeyHistory) Signer {
	l := v.Mirror.ListVersion(ctx, p, ver)
	r.Problems = append(r.Problems, l.Problems...)
	r.Warnings = append(r.Warnings, l.Warnings...)
	r.Archives += l.Elsewhere
	if l.Packages == nil {
		return Signer{} // the listing cannot be read
	}
	rec, recErr := v.Mirror.ReadRecord(ctx, p, ver)
	var verdict Verdict
	if recErr != nil {
		v.noRecord(r, l.Where, p, ver, recErr)
	} else {
		verdict = v.verifyRecord(r, p, ver, rec, l, history)
	}
	sums := verdict.Sums
	for _, plat := range slices.SortedFunc(maps.Keys(l.Packages), comparePlatforms) {
		r.Archives++
		listed := l.Packages[plat]
		computed, ok := v.verifyArchive(ctx, r, Package{Provider: p, Version: ver, Platform: plat}, l.Where, listed)
		if !ok || recErr != nil {
			continue
		}
		v.checkProvenance(r, l.Where, plat.String(), rec.Provenance, sums, computed)
		entry, _, err := rec.Provenance.Entry(p, ver, plat)
		if err != nil {
			r.problem(l.Where, "%s: %v", plat, err)
			continue
		}
		v.checkSBOM(ctx, r, l.Where, Package{Provider: p, Version: ver, Platform: plat}, entry, computed.Program)
	}
	return verdict.Signer
}

func comparePlatforms(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) }

// noRecord judges a release whose mirror keeps no provenance: only the
// hashes the mirror lists vouch for its packages, which the trust policy
// accepts with a warning or refuses.
func (v *Verifier) noRecord(r *VerifyReport, where string, p addrs.Provider, ver addrs.Version, recErr error) {
	if !errors.Is(recErr, fs.ErrNotExist) {
		// A record that is there but cannot be read, or whose signed
		// files are gone, is no release without provenance.
		r.problem(where, "the release's provenance record cannot be used, so nothing ties its packages to the origin's signature: %v", recErr)
		return
	}
	_, err := v.Trust.Authenticate(v.Checker, Package{Provider: p, Version: ver}, Evidence{HashesOnly: v.Mirror.Location()})
	if err != nil {
		r.problem(where, "no provenance kept for this release, so nothing ties its packages to the origin's signature: %v", err)
		return
	}
	r.warn(where, "no provenance kept for this release, so its origin cannot be re-verified and only the hashes listed vouch for its packages (%s): %v", AdviceRefuseUnsigned, recErr)
}

// verifyRecord re-authenticates the kept SHA256SUMS, signature and keys
// under the trust policy, the signer compared with history (a key change
// the policy refuses is a problem, one it accepts a warning), and checks
// the recorded signer; problems are reported where the listing says. The
// verdict is zero when the evidence fails.
func (v *Verifier) verifyRecord(r *VerifyReport, p addrs.Provider, ver addrs.Version, rec layout.Record, at layout.Listing, history *KeyHistory) Verdict {
	ev := KeptEvidence(rec)
	ev.History = history
	verdict, err := v.Trust.Authenticate(v.Checker, Package{Provider: p, Version: ver}, ev)
	var verr *VerificationError
	if errors.As(err, &verr) {
		switch verr.Evidence {
		case EvidenceSignature:
			r.problem(at.Signature, "the kept signature does not verify against the kept keys: %v", err)
		case EvidenceSigner:
			r.problem(at.Provenance, "%v", err)
		default:
			r.problem(at.Sums, "%v", err)
		}
		return Verdict{}
	}
	if err != nil {
		r.problem(at.Sums, "%v", err)
		return Verdict{}
	}
	for _, w := range verdict.Warnings {
		r.Accepted = append(r.Accepted, Problem{Path: at.Sums, Message: w})
	}
	if msg := recordedSigner(rec.Provenance, verdict.Signer); msg != "" {
		r.problem(at.Provenance, "%s", msg)
	}
	return verdict
}

// recordedSigner says how the key a provenance record names differs from
// the one that made the kept signature, as the kept keys describe it: its
// ID, fingerprint and dates (each as far as the record names it); "" when
// they agree.
func recordedSigner(prov layout.Provenance, s Signer) string {
	switch {
	case prov.KeyID != "" && prov.KeyID != s.KeyID:
		return fmt.Sprintf("recorded as verified by key %s, but key %s made the signature", prov.KeyID, s.KeyID)
	case prov.Fingerprint != "" && prov.Fingerprint != s.Fingerprint:
		return fmt.Sprintf("records the fingerprint %s for key %s, but the kept key's is %s", prov.Fingerprint, s.KeyID, s.Fingerprint)
	case !prov.KeyCreated.IsZero() && !prov.KeyCreated.Equal(s.Created):
		return fmt.Sprintf("records key %s as made %s, but the kept key was made %s", s.KeyID, prov.KeyCreated.UTC().Format(time.RFC3339), s.Created.UTC().Format(time.RFC3339))
	case !prov.KeyCreated.IsZero() && !prov.KeyExpires.Equal(s.Expires):
		return fmt.Sprintf("records key %s as current until %s, but the kept key and signature say %s", s.KeyID, dateOrNever(prov.KeyExpires), dateOrNever(s.Expires))
	}
	return ""
}

func dateOrNever(t time.Time) string {
	if t.IsZero() {
		return "no expiry"
	}
	return t.UTC().Format(time.RFC3339)
}

// verifyArchive reads one listed archive and checks the hashes listed for
// it.
func (v *Verifier) verifyArchive(ctx context.Context, r *VerifyReport, pkg Package, where string, listed layout.ListedPackage) (hashing.ArchiveSums, bool) {
	computed, err := archiveSums(ctx, v.Mirror, pkg, v.Limits, v.TempDir)
	if err != nil {
		r.problem(listed.Archive, "%s archive: %v", pkg.Platform, err)
		return hashing.ArchiveSums{}, false
	}
	known := computed.All()
	for _, h := range listed.Hashes {
		if !slices.Contains(known, h) {
			r.problem(where, "%s lists %s, which does not match %s (its hashes are %v)", pkg.Platform, h, listed.Archive, known)
		}
	}
	return computed, true
}

// checkProvenance ties an archive to the signed SHA256SUMS it came with.
func (v *Verifier) checkProvenance(r *VerifyReport, where, plat string, prov layout.Provenance, sums hashing.Sums, computed hashing.ArchiveSums) {
	a, ok := prov.Archives[plat]
	if !ok {
		r.problem(where, "%s is not in the release's provenance record", plat)
		return
	}
	if a.H1 != computed.H1Unpacked {
		r.problem(where, "%s: provenance records %s, the archive unpacks to %s", plat, a.H1, computed.H1Unpacked)
	}
	if sums == nil {
		return
	}
	listed, ok := sums[a.Filename]
	if !ok {
		r.problem(where, "%s: the kept SHA256SUMS has no line for %q", plat, a.Filename)
		return
	}
	if hashing.ZH(listed) != computed.ZH {
		r.problem(where, "%s: the archive is %s, but the signed SHA256SUMS says %s", plat, computed.ZH, hashing.ZH(listed))
	}
}

// checkSBOM checks that the SBOM the provenance names for a package is
// there and, with CheckSBOM, describes it. A package published without
// one (the provenance names none) has nothing to check.
func (v *Verifier) checkSBOM(ctx context.Context, r *VerifyReport, where string, pkg Package, entry layout.ProvenanceArchive, program hashing.Program) {
	if entry.SBOM == "" {
		return
	}
	if _, ok := entry.SBOMFor(pkg.Provider, pkg.Version, pkg.Platform.String()); !ok {
		r.problem(where, "%s: the provenance names the SBOM %s, not %s", pkg.Platform, excerpt.Quote(entry.SBOM), layout.SBOMName(pkg.Provider, pkg.Version, pkg.Platform))
		return
	}
	data, err := v.Mirror.ReadSBOM(ctx, pkg.Provider, pkg.Version, pkg.Platform)
	if err != nil {
		r.problem(where, "%s: the provenance names the SBOM %s, which cannot be read: %v", pkg.Platform, entry.SBOM, err)
		return
	}
	if v.CheckSBOM == nil {
		return
	}
	if err := v.CheckSBOM(pkg, entry, data, program); err != nil {
		r.problem(where, "%s: the SBOM %s is not this package's: %v", pkg.Platform, entry.SBOM, err)
	}
}

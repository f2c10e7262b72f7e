package mirror

import (
	"fmt"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Evidence is what a release offers to prove where it came from: the
// origin's SHA256SUMS, its detached signature and the signing keys the
// origin advertised, fetched now from the origin or kept in a mirror.
type Evidence struct {
	Sums      []byte
	Signature []byte   // nil when the origin published none
	Keys      []string // ASCII-armored public keys
	// HashesOnly names the upstream that vouches for the release with
	// hashes alone (a network or filesystem mirror that keeps no
	// signature), when that is all there is: Sums then lists what it
	// vouched for, or nothing when it gave only h1: hashes.
	HashesOnly string
}

// Advice ends a warning about what the policy accepted, naming the policy
// that would refuse it; the command line names the setting for it.
const (
	AdviceRefuseUnsigned = "the trust policy can refuse unsigned releases"
	AdviceRefuseExpired  = "the trust policy can refuse expired keys"
)

// KeptEvidence is the evidence a mirror keeps for a release, for every
// command that re-authenticates what a mirror holds.
func KeptEvidence(rec layout.Record) Evidence {
	return Evidence{Sums: rec.Sums, Signature: rec.Signature, Keys: rec.Provenance.SigningKeys, HashesOnly: rec.Provenance.HashesOnly}
}

// Verdict is a trusted release's evidence, as checked.
type Verdict struct {
	Sums     hashing.Sums
	Signer   Signer // zero for an unsigned release the policy allows
	Unsigned bool
	// HashesOnly names the upstream that vouched for the release with
	// hashes alone, when the policy accepted that.
	HashesOnly string
	// Warnings say what was accepted that a stricter policy would refuse.
	Warnings []string
}

// Authenticate is the one trust decision: whether the evidence of a
// release of pkg's provider is trusted under the policy. The build (for
// what an origin serves now) and lock, verify, the registry replica and
// bundle import (for what a mirror keeps) all call it, so a release gets
// the same verdict from every command.
//
// It composes small steps, in the way OpenTofu composes its package
// authentication, each refusing with a *VerificationError: SHA256SUMS must
// parse; a release without signing keys is allowed only on the default
// registry host, as OpenTofu does, unless the policy refuses unsigned
// releases; the signature must verify against the advertised keys; the
// signer must be one the policy allows; an expired signer is refused when
// the policy says so, and accepted with a warning otherwise. Evidence of
// hashes alone (an upstream mirror that keeps no signature) proves only
// that the archives are those the upstream listed: it is accepted with a
// warning, unless the policy refuses unsigned releases or names the keys
// that must sign.
func (tp TrustPolicy) Authenticate(checker SignatureChecker, pkg Package, ev Evidence) (Verdict, error) {
	a := authentication{trust: tp.For(pkg.Provider), checker: checker, pkg: pkg, ev: ev}
	for _, step := range []func() error{a.parseSums, a.hashesOnly, a.unsigned, a.signature, a.signer, a.expiry} {
		if a.done {
			break
		}
		if err := step(); err != nil {
			return Verdict{}, err
		}
	}
	return a.verdict, nil
}

// authentication is one run of Authenticate.
type authentication struct {
	trust   Trust
	checker SignatureChecker
	pkg     Package
	ev      Evidence
	verdict Verdict
	done    bool // an allowed unsigned release skips the signature steps
}

func (a *authentication) refuse(part EvidencePart, problem string, err error) error {
	return &VerificationError{Package: a.pkg, Problem: problem, Err: err, Evidence: part}
}

func (a *authentication) parseSums() error {
	if a.ev.HashesOnly != "" && len(a.ev.Sums) == 0 {
		a.verdict.Sums = hashing.Sums{}
		return nil
	}
	sums, err := hashing.ParseSums(a.ev.Sums)
	if err != nil {
		return a.refuse(EvidenceSums, "SHA256SUMS is malformed", err)
	}
	a.verdict.Sums = sums
	return nil
}

func (a *authentication) hashesOnly() error {
	from := a.ev.HashesOnly
	if from == "" {
		return nil
	}
	switch {
	case len(a.ev.Keys) > 0 || a.ev.Signature != nil:
		return a.refuse(EvidenceKeys, fmt.Sprintf("the evidence from %s is both signed and hashes only", from), nil)
	case a.trust.RefuseUnsigned:
		return a.refuse(EvidenceKeys, fmt.Sprintf("%s vouches for it with hashes only (no signature kept), and the trust policy refuses unsigned releases", from), nil)
	case len(a.trust.KeyIDs) > 0:
		return a.refuse(EvidenceKeys, fmt.Sprintf("%s vouches for it with hashes only (no signature kept), and the trust policy for %s requires a signature by %s", from, a.pkg.Provider, joinIDs(a.trust.KeyIDs)), nil)
	}
	a.verdict.Unsigned, a.verdict.HashesOnly, a.done = true, from, true
	a.verdict.Warnings = append(a.verdict.Warnings, fmt.Sprintf(
		"%s %s: %s keeps no signature, so only its hashes vouch for the packages ("+AdviceRefuseUnsigned+")",
		a.pkg.Provider, a.pkg.Version, from))
	return nil
}

func (a *authentication) unsigned() error {
	if len(a.ev.Keys) > 0 {
		return nil
	}
	p := a.pkg.Provider
	switch {
	case p.Hostname != addrs.DefaultRegistryHost:
		return a.refuse(EvidenceKeys, fmt.Sprintf("the origin advertises no signing keys for this release, so SHA256SUMS cannot be authenticated (%s packages must be signed)", p.Hostname.ForDisplay()), nil)
	case a.trust.RefuseUnsigned:
		return a.refuse(EvidenceKeys, "the origin advertises no signing keys for this release, and the trust policy refuses unsigned releases", nil)
	}
	a.verdict.Unsigned, a.done = true, true
	a.verdict.Warnings = append(a.verdict.Warnings, fmt.Sprintf(
		"%s %s: %s publishes no signing keys for it; the signature check is skipped, as OpenTofu does ("+AdviceRefuseUnsigned+")",
		p, a.pkg.Version, p.Hostname.ForDisplay()))
	return nil
}

func (a *authentication) signature() error {
	if a.ev.Signature == nil {
		return a.refuse(EvidenceSignature, "signing keys are published, but there is no signature of SHA256SUMS", nil)
	}
	signer, err := a.checker.CheckSignature(a.ev.Sums, a.ev.Signature, a.ev.Keys)
	if err != nil {
		return a.refuse(EvidenceSignature, "SHA256SUMS signature is not valid", err)
	}
	a.verdict.Signer = signer
	return nil
}

func (a *authentication) signer() error {
	if !a.trust.allows(a.verdict.Signer) {
		return a.refuse(EvidenceSigner, fmt.Sprintf("signed by key %s, which the trust policy for %s does not allow (allowed: %s)",
			a.verdict.Signer.KeyID, a.pkg.Provider, joinIDs(a.trust.KeyIDs)), nil)
	}
	return nil
}

func (a *authentication) expiry() error {
	s := a.verdict.Signer
	switch {
	case !s.Expired:
	case a.trust.RefuseExpired:
		return a.refuse(EvidenceSigner, fmt.Sprintf("signed by key %s, which %s; the trust policy for %s refuses expired keys", s.KeyID, expiredSince(s), a.pkg.Provider), nil)
	default:
		a.verdict.Warnings = append(a.verdict.Warnings, fmt.Sprintf(
			"%s %s: signed by key %s, which %s; accepted, as OpenTofu does ("+AdviceRefuseExpired+")", a.pkg.Provider, a.pkg.Version, s.KeyID, expiredSince(s)))
	}
	return nil
}

// expiredSince says when an expired signer expired, as far as it is known.
func expiredSince(s Signer) string {
	if s.Expires.IsZero() {
		return "has expired"
	}
	return "expired on " + s.Expires.UTC().Format(time.DateTime) + " UTC"
}

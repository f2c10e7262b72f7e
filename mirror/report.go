package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Status is the outcome of one package in a build.
type Status string

// Package outcomes.
const (
	StatusMirrored Status = "mirrored" // downloaded, verified and published
	StatusPresent  Status = "present"  // already in the tree with the right bytes
	StatusSkipped  Status = "skipped"  // not published, by policy (e.g. missing platform)
	// StatusHeld: verified but not published, held back by the
	// vulnerabilities policy (hold); a later build publishes it once the
	// policy or the database lets it.
	StatusHeld   Status = "held"
	StatusFailed Status = "failed" // not published because of an error
	// StatusCanceled: not published because the build was stopped (Ctrl-C,
	// SIGTERM) before it was; a run of the same build finishes it.
	StatusCanceled Status = "canceled"
)

// canceled restates the failure of a package the build was stopped
// before as canceled: not a problem of the package, nothing to report one
// by one.
func canceled(s Status, err error) Status {
	if s == StatusFailed && errors.Is(err, context.Canceled) {
		return StatusCanceled
	}
	return s
}

// Package identifies one package: a provider, a version and a platform.
type Package struct {
	Provider addrs.Provider
	Version  addrs.Version
	Platform addrs.Platform
}

func (p Package) String() string {
	if p.Platform == (addrs.Platform{}) { // a whole release
		return fmt.Sprintf("%s %s", p.Provider, p.Version)
	}
	return fmt.Sprintf("%s %s %s", p.Provider, p.Version, p.Platform)
}

// Result is what happened to one package.
type Result struct {
	Package
	Status Status
	// Reason says why a package was skipped or failed.
	Reason string
	// Err is the failure, for StatusFailed.
	Err error
	// Bytes is the archive's size.
	Bytes int64
	// KeyID is the OpenPGP key that verified the release, or "" when
	// signing was skipped.
	KeyID string
	// HashesOnly names the upstream whose hashes alone vouched for the
	// package, when no signature did.
	HashesOnly string
	// Advisories are the package's known vulnerabilities (with
	// Options.Advise), whatever the policy made of them.
	Advisories []Advisory
	// Advised says Options.Advise looked at the package in this build
	// (a package kept from an earlier build is not read again).
	Advised bool
}

// Event is reported while a build runs. Exactly one of its fields is set.
type Event struct {
	// Started is set when a package's download begins.
	Started *Package
	// Result is set when a package is finished.
	Result *Result
	// Warning is set for a problem that did not stop any package.
	Warning string
	// Keys is set when a release's signer was compared with the
	// provider's releases the mirror holds, and was the first, another
	// key or refused (not when it was the same key).
	Keys *KeyContinuity
	// Deprecation is set when a provider's version list warns of it (a
	// deprecation, say): once per provider and build.
	Deprecation *Deprecation
}

// Report summarizes a finished build.
type Report struct {
	Results []Result
	// Modules are the module versions a build handled.
	Modules  []ModuleResult
	Warnings []string
	// Deprecations are the warnings of every provider whose version list
	// has a place for them (a provider registry's), sorted by provider:
	// none for one means the origin has none now.
	Deprecations []Deprecation
	// Errors are failures not tied to one package: a plan that could not
	// be resolved (then nothing was published).
	Errors []error
}

// Count returns how many packages ended with status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, res := range r.Results {
		if res.Status == s {
			n++
		}
	}
	return n
}

// CountModules returns how many module versions ended with status s.
func (r *Report) CountModules(s Status) int {
	n := 0
	for _, res := range r.Modules {
		if res.Status == s {
			n++
		}
	}
	return n
}

// Err returns nil when the build fully succeeded, or an error that joins
// every failure. Verification failures remain detectable with errors.As.
// Packages canceled are one failure, context.Canceled, not one each.
func (r *Report) Err() error {
	errs := append([]error(nil), r.Errors...)
	stopped := slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, context.Canceled) })
	for _, res := range r.Results {
		switch {
		case res.Status == StatusFailed:
			errs = append(errs, res.Err)
		case res.Status == StatusCanceled && !stopped:
			errs, stopped = append(errs, context.Canceled), true
		}
	}
	for _, res := range r.Modules {
		switch {
		case res.Status == StatusFailed:
			errs = append(errs, res.Err)
		case res.Status == StatusCanceled && !stopped:
			errs, stopped = append(errs, context.Canceled), true
		}
	}
	return errors.Join(errs...)
}

func (r *Report) sort() {
	sort.SliceStable(r.Results, func(i, j int) bool {
		a, b := r.Results[i], r.Results[j]
		switch {
		case !a.Provider.Equals(b.Provider):
			return a.Provider.LessThan(b.Provider)
		case !a.Version.Same(b.Version):
			return a.Version.LessThan(b.Version)
		default:
			return addrs.LessPlatform(a.Platform, b.Platform)
		}
	})
}

// VerificationError means a package did not match what its origin promised
// or its signature did not check out. Such a package is never published.
type VerificationError struct {
	Package Package
	Problem string
	Err     error
	// Evidence names the part of a release's evidence that failed the
	// trust decision, when it was one.
	Evidence EvidencePart
}

// EvidencePart is a part of a release's evidence.
type EvidencePart int

// The parts of a release's evidence, as Authenticate checks them.
const (
	EvidenceNone      EvidencePart = iota
	EvidenceSums                   // SHA256SUMS itself
	EvidenceKeys                   // the signing keys (none published)
	EvidenceSignature              // the signature over SHA256SUMS
	EvidenceSigner                 // the key that signed, under the policy
)

func (e *VerificationError) Error() string {
	msg := fmt.Sprintf("verify %s: %s", e.Package, e.Problem)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *VerificationError) Unwrap() error { return e.Err }

// PackageError is any other failure of one package, such as a download
// that could not complete.
type PackageError struct {
	Package Package
	Err     error
}

func (e *PackageError) Error() string { return fmt.Sprintf("%s: %v", e.Package, e.Err) }

func (e *PackageError) Unwrap() error { return e.Err }

// ResolveError means a requirement could not be turned into releases.
type ResolveError struct {
	Provider addrs.Provider
	// Input is true when what was asked for is wrong (no such provider,
	// no version satisfies the constraints), false for failures such as
	// an unreachable registry.
	Input bool
	Err   error
}

func (e *ResolveError) Error() string { return fmt.Sprintf("%s: %v", e.Provider, e.Err) }

func (e *ResolveError) Unwrap() error { return e.Err }

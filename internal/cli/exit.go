package cli

import (
	"context"
	"errors"

	"github.com/tfmirror/tfmirror/internal/build"
	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/locks"
	"github.com/tfmirror/tfmirror/mirror"
)

// Exit codes, documented in the README.
const (
	ExitOK           = 0   // everything asked for was done
	ExitFailure      = 1   // something failed (network, origin, filesystem, --strict)
	ExitUsage        = 2   // bad flags, arguments or manifest
	ExitVerification = 3   // a package or signature failed verification
	ExitInterrupted  = 130 // stopped by Ctrl-C or SIGTERM
)

// usageError marks mistakes in how tfmirror was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// ExitCode maps an error to its exit code. A verification failure wins
// over other failures, because it is the one that must never be ignored.
func ExitCode(err error) int {
	var (
		vfail *VerifyFailedError
		bfail *bundle.RefusedError
		verr  *mirror.VerificationError
		cerr  *config.Error
		ierr  *locks.InputError
		berr  *build.InputError
		usage usageError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &verr), errors.As(err, &vfail), errors.As(err, &bfail), errors.Is(err, mirror.ErrUpstreamMoved):
		return ExitVerification
	case errors.As(err, &cerr), errors.As(err, &ierr), errors.As(err, &berr), errors.As(err, &usage), isInputError(err):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitFailure
	}
}

// isInputError reports whether err holds a requirement that cannot be
// satisfied as asked (unknown provider, no matching version) and no other
// kind of failure.
func isInputError(err error) bool {
	leaves := flatten(err)
	for _, e := range leaves {
		var rerr *mirror.ResolveError
		var merr *mirror.ModuleError
		switch {
		case errors.As(e, &rerr) && rerr.Input:
		case errors.As(e, &merr) && merr.Input:
		default:
			return false
		}
	}
	return len(leaves) > 0
}

// flatten returns the leaves of a tree of joined errors.
func flatten(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range joined.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	if wrapper, ok := err.(interface{ Unwrap() error }); ok {
		if inner := wrapper.Unwrap(); inner != nil {
			if _, joined := inner.(interface{ Unwrap() []error }); joined {
				return flatten(inner)
			}
		}
	}
	return []error{err}
}

// Package app is the layer of commands. Each command is a package of its
// own below it (app/build, app/lock, app/verify, app/prune, app/replica,
// app/bundle, app/serve) with Run(ctx, Options) (Report, error): it reads
// the manifest and builds the settings through config.Resolve, opens every
// location through package endpoint, composes the core (mirror, layout,
// hashing) with the adapters, and refreshes the tree's derived views
// (package views) after it writes. No command imports another.
//
// This package holds what they share: the exit codes and the one map from
// errors to them (ExitCode), the failures commands report, the one
// reading and matching of the SBOMs a built mirror holds (MatchSBOMs: for
// audit, and for the packages a build with a database keeps), and what
// goes into the change record of a run that changed a tree (BuildChanges,
// RecordChanges; layout writes it).
// internal/cli maps flags to a command's Options and its Report to text or
// JSON; it decides nothing.
package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/mirror"
)

// Exit codes, documented in docs/exit-codes.md.
const (
	ExitOK           = 0   // everything asked for was done
	ExitFailure      = 1   // something failed (network, origin, filesystem, --strict)
	ExitUsage        = 2   // bad flags, arguments, locations or manifest
	ExitVerification = 3   // a package or signature failed verification
	ExitInterrupted  = 130 // stopped by Ctrl-C or SIGTERM
)

// ProblemsError means a check found problems in a mirror (verify).
type ProblemsError struct{ Problems int }

func (e *ProblemsError) Error() string {
	return "the mirror has " + plural.Count(e.Problems, "problem")
}

// LockChurnError means lock files would not survive "init" through the
// mirror: init would rewrite them or fail on them (lock --check, and what
// lock --fix could not write). Pinned counts those that pin a version init
// cannot install, which lock cannot write either. It is exit 1.
type LockChurnError struct {
	Files  int
	Pinned int
	Fixing bool
}

func (e *LockChurnError) Error() string {
	msg := plural.Count(e.Files, "lock file") + " would not survive init"
	if e.Files > e.Pinned && !e.Fixing {
		msg += ": run tfmirror lock --fix with the same arguments"
	}
	if e.Pinned > 0 {
		verb := "pin"
		if e.Pinned == 1 {
			verb = "pins"
		}
		msg += fmt.Sprintf("; %d %s a version the constraints exclude or the mirror lacks, or a provider the mirror does not hold as the client reads it (see the findings): lock cannot write those; change the configuration or the constraints, or run init -upgrade, then check again", e.Pinned, verb)
	}
	return msg
}

// ExitCode maps an error to its exit code. A verification failure wins
// over other failures, because it is the one that must never be ignored.
func ExitCode(err error) int {
	var (
		vfail  *ProblemsError
		bfail  *bundle.RefusedError
		verr   *mirror.VerificationError
		cerr   *config.Error
		catErr *CatalogError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &verr), errors.As(err, &vfail), errors.As(err, &bfail), errors.As(err, &catErr), errors.Is(err, mirror.ErrUpstreamMoved):
		return ExitVerification
	case errors.As(err, &cerr), inputerr.Is(err), isInputError(err):
		return ExitUsage
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	default:
		return ExitFailure
	}
}

// isInputError reports whether err holds a requirement that cannot be
// satisfied as asked (unknown provider, no matching version, a platform
// no release publishes) and no other kind of failure.
func isInputError(err error) bool {
	leaves := flatten(err)
	for _, e := range leaves {
		var rerr *mirror.ResolveError
		var merr *mirror.ModuleError
		var perr *mirror.UnpublishedPlatformError
		switch {
		case errors.As(e, &perr):
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

// ParsePlatforms parses --platform values (addrs.ParseUserPlatforms).
func ParsePlatforms(raw []string) ([]addrs.Platform, error) {
	out, _, err := addrs.ParseUserPlatforms(raw)
	if err != nil {
		return nil, inputerr.Wrap(fmt.Errorf("--platform: %w", err))
	}
	return out, nil
}

// Usage marks err as a mistake in how tfmirror was called (exit 2).
func Usage(err error) error { return inputerr.Wrap(err) }

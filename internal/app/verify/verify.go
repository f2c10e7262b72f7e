// Package verify is the verify command: it checks a built or published
// mirror the way clients see it (package mirror's Verifier), whatever the
// location: a directory, an http(s):// mirror, a bucket, an OCI registry
// or image layout.
package verify

import (
	"context"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/mirror"
)

// Options say what to verify.
type Options struct {
	// Mirror is the location to check.
	Mirror  string
	Flags   settings.Flags
	Process settings.Process
}

// Report is the verification's outcome; Warnings include what the trust
// policy accepted with a warning.
type Report = mirror.VerifyReport

// Run checks the mirror. Problems found are in the report and make the
// error an *app.ProblemsError; any other error means the mirror could not
// be checked.
func Run(ctx context.Context, opts Options) (*Report, error) {
	ref, m, s, err := app.Locate(opts.Mirror, opts.Flags, opts.Process)
	if err != nil {
		return nil, err
	}
	packages, err := endpoint.OpenMirror(ctx, ref, s)
	if err != nil {
		return nil, err
	}
	v := &mirror.Verifier{Mirror: packages, Checker: signing.Checker{}, Trust: s.Trust, Limits: s.ZipLimits, ModuleLimits: s.ModuleLimits, CheckSBOM: sbom.Check}
	if ref.Kind == endpoint.OCI || ref.Kind == endpoint.OCILayout {
		// A registry cannot be asked which repositories it holds.
		if v.Providers = app.ManifestProviders(m); len(v.Providers) == 0 {
			return nil, inputerr.Wrap(fmt.Errorf("%s: a registry cannot be asked which repositories it holds; name the providers to check with the provider blocks of a manifest (--config)", ref))
		}
	}
	report, err := v.Verify(ctx)
	if err != nil {
		return nil, err
	}
	report.Warnings = append(report.Warnings, report.Accepted...)
	if len(report.Problems) > 0 {
		return report, &app.ProblemsError{Problems: len(report.Problems)}
	}
	return report, nil
}

// Package verify is the verify command: it checks a built or published
// mirror the way clients see it (package mirror's Verifier), whatever the
// location: a directory, an http(s):// mirror, a bucket, an OCI registry
// or image layout. With --catalog-key it also checks that catalog.json is
// signed by that key and lists exactly the tree's archives.
package verify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
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
	var catalog *layout.Catalog
	if s.CatalogKeys != nil {
		// The signature first: a catalog it does not vouch for is the
		// one problem, whatever else it says.
		c, problem, err := signedCatalog(ctx, packages, s.CatalogKeys)
		if err != nil {
			return nil, err
		}
		if problem != nil {
			return &Report{Problems: []mirror.Problem{*problem}}, &app.ProblemsError{Problems: 1}
		}
		catalog = &c
	}
	report, err := v.Verify(ctx)
	if errors.Is(err, fs.ErrNotExist) && len(v.Providers) == 0 {
		// A tree over HTTP that keeps no catalog.json (another tool's
		// mirror, or a wrong URL) cannot say what it holds.
		if v.Providers = app.ManifestProviders(m); len(v.Providers) == 0 {
			return nil, inputerr.Wrap(fmt.Errorf("%w; name the providers to check with the provider blocks of a manifest (--config)", err))
		}
		if report, err = v.Verify(ctx); err == nil && report.Versions == 0 && report.Modules == 0 {
			// Nothing of what the manifest names is there either: a
			// wrong URL, not a mirror with problems.
			return nil, inputerr.Wrap(fmt.Errorf("%s holds no mirror: no catalog.json, and no index.json of the %s the manifest names", ref, plural.Count(len(v.Providers), "provider")))
		}
	}
	if err != nil {
		return nil, err
	}
	if (ref.Kind == endpoint.OCI || ref.Kind == endpoint.OCILayout) && report.Versions == 0 && report.Modules == 0 {
		return nil, endpoint.NoRepositories(ref, len(v.Providers)) // a wrong registry or template
	}
	if tree, ok := packages.(*layout.Tree); ok {
		if err := checkTree(ctx, ref, tree, catalog, s.CatalogKeys, report); err != nil {
			return nil, err
		}
		if ref.Kind == endpoint.Dir && layout.ExistingKind(ref.Path) == layout.Filesystem {
			// What clients read is the view, not the store behind it.
			problems, err := layout.CheckFilesystem(ctx, tree, ref.Path, s.ZipLimits)
			if err != nil {
				return nil, fmt.Errorf("check the filesystem mirror %s: %w", ref.Path, err)
			}
			report.Problems = append(report.Problems, problems...)
		}
	}
	report.Warnings = append(report.Warnings, report.Accepted...)
	if len(report.Problems) > 0 {
		return report, &app.ProblemsError{Problems: len(report.Problems)}
	}
	return report, nil
}

// checkTree adds to report what only a tree (a directory, a URL, a
// bucket) can be checked for: that it holds a mirror at all, its registry
// replica's download documents, and, with a signed catalog, the archives
// it lists and the change records.
func checkTree(ctx context.Context, ref endpoint.Ref, tree *layout.Tree, catalog *layout.Catalog, keys *signing.TrustedKeys, report *mirror.VerifyReport) error {
	if report.Providers == 0 && report.Modules == 0 {
		// A wrong directory, URL or prefix, not a mirror without faults;
		// a mirror emptied by prune keeps its catalog.json.
		if err := endpoint.RequireMirror(ctx, ref, tree); err != nil {
			return err
		}
	}
	problems, err := replica.Check(ctx, tree)
	if err != nil {
		return fmt.Errorf("check the registry replica: %w", err)
	}
	report.Problems = append(report.Problems, problems...)
	if catalog == nil {
		return nil
	}
	problems, err = app.CatalogProblems(ctx, tree, *catalog)
	switch {
	case err != nil && len(report.Problems) == 0:
		return err
	case err != nil:
		// What the verification found already stops the comparison
		// (a document that does not parse): a problem like them.
		problems = append(problems, mirror.Problem{Path: layout.CatalogPath, Message: "the signed catalog cannot be compared with the mirror: " + err.Error()})
	}
	report.Problems = append(report.Problems, problems...)
	return checkChanges(ctx, tree, catalog.Changes, keys, report)
}

// checkChanges checks the change records the index lists, each signed
// one held to keys (--catalog-key), the keys the catalog is held to, and
// the records the signed catalog pins: the feed a team follows says only
// what the mirror's signer wrote, and its history stays as signed. A
// record written after the catalog was signed is a warning: nothing
// vouches for it.
func checkChanges(ctx context.Context, tree *layout.Tree, pins []layout.CatalogChange, keys *signing.TrustedKeys, report *mirror.VerifyReport) error {
	found := tree.CheckSignedChanges(ctx, func(record, sig []byte) error {
		_, err := keys.VerifyArmored(record, sig)
		return err
	})
	for _, rel := range slices.Sorted(maps.Keys(found)) {
		report.Problems = append(report.Problems, mirror.Problem{Path: rel, Message: found[rel].Error()})
	}
	if found[layout.ChangeIndexPath] != nil {
		return nil
	}
	problems, unpinned, err := tree.CheckChangePins(ctx, pins)
	if err != nil {
		return fmt.Errorf("check the change records %s pins: %w", layout.CatalogPath, err)
	}
	report.Problems = append(report.Problems, problems...)
	if len(unpinned) > 0 {
		report.Warnings = append(report.Warnings, mirror.Problem{Path: layout.ChangeIndexPath, Message: fmt.Sprintf(
			"lists %s that the signed %s does not pin (written after it was signed; nothing vouches for them): %s",
			plural.Count(len(unpinned), "change record"), layout.CatalogPath, listSome(unpinned, 5))})
	}
	return nil
}

// signedCatalog reads the mirror's catalog.json and checks its signature
// by one of keys (--catalog-key): one that fails is a problem.
func signedCatalog(ctx context.Context, packages mirror.Packages, keys *signing.TrustedKeys) (layout.Catalog, *mirror.Problem, error) {
	c, _, err := app.ReadSignedCatalog(ctx, packages, keys)
	var cerr *app.CatalogError
	if errors.As(err, &cerr) {
		return c, &mirror.Problem{Path: cmp.Or(cerr.Path, layout.CatalogSignaturePath), Message: cerr.Err.Error()}, nil
	}
	return c, nil, err
}

// listSome joins the first n of names, and counts the others.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

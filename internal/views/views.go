// Package views keeps what is derived from a mirror tree in step with it:
// the catalog page (index.html, package htmlcatalog), the module registry
// replica and the provider registry replica (package replica). Every
// writer of a tree (build, bundle import, the replica command, prune)
// calls Refresh once it has published or pruned, under the lock it holds,
// so no derived file offers what the tree no longer holds or hides what it
// now holds. It also keeps what catalog.json says of each provider (its
// kept warnings and signing keys: layout.Tree.DescribeCatalog) and its
// archive listing, once the catalog is sealed, current, and signs it
// with the writer's key (catalog.json.asc).
//
// It owns when each view is rewritten; what a view holds is its package's,
// and what the tree holds is layout's.
package views

import (
	"context"
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
)

// Options say which views to write beyond those the tree already holds.
type Options struct {
	// Providers writes the provider registry replica (build
	// --registry-replica, the replica command); it is rewritten anyway
	// when the tree holds one.
	Providers bool
	// Trust decides which kept releases the provider replica offers.
	Trust replica.Trust
	// Locate gives the module documents' locations; nil: the packages in
	// the tree.
	Locate replica.ModuleLocator
	// Sign, if set, signs catalog.json (layout.Tree.SealCatalog); a
	// catalog signed before keeps its archive listing current either way.
	Sign *signing.SigningKey
}

// Report says what Refresh wrote.
type Report struct {
	// Location is where the replica is, for messages.
	Location string
	// Replica is what the replica holds, nil when none was written;
	// ProviderReplica says whether it holds the providers too.
	Replica         *replica.Report
	ProviderReplica bool
	// Seal is what became of catalog.json's archive listing and
	// signature; SignedBy the key that signed it, if one was given.
	Seal     layout.SealReport
	SignedBy string
}

// Refresh rewrites the tree's derived views: the provider registry
// replica when asked for or already there, the module registry replica
// when the tree holds modules (clients find them only through it) or a
// module replica, then the catalog page. Each file is rewritten only
// when its content changes. A release the replica's trust decision
// refuses is left out of it, and reported in the error, after the page
// is written.
func Refresh(ctx context.Context, tree *layout.Tree, opts Options) (*Report, error) {
	providers, modules, err := replica.Holds(ctx, tree)
	if err != nil {
		return nil, err
	}
	providers = providers || opts.Providers
	if !modules && !providers {
		held, err := tree.Modules(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the modules of %s: %w", tree.Location(), err)
		}
		modules = len(held) > 0
	}
	report := &Report{Location: location(tree), ProviderReplica: providers}
	var replicaErr error
	switch {
	case providers:
		trust := opts.Trust
		report.Replica, replicaErr = replica.WriteWith(ctx, tree, &trust, opts.Locate)
		if replicaErr != nil {
			replicaErr = fmt.Errorf("the registry replica of %s leaves out what no longer verifies:\n%w", location(tree), replicaErr)
		}
	case modules:
		report.Replica, replicaErr = replica.WriteWith(ctx, tree, nil, opts.Locate)
		if replicaErr != nil {
			return nil, fmt.Errorf("write the module registry of %s: %w", location(tree), replicaErr)
		}
	}
	if report.Replica == nil && replicaErr != nil {
		return nil, replicaErr
	}
	if _, err := tree.DescribeCatalog(ctx); err != nil {
		return report, fmt.Errorf("describe the providers in %s of %s: %w", layout.CatalogPath, tree.Location(), err)
	}
	if err := seal(ctx, tree, opts.Sign, report); err != nil {
		return report, err
	}
	if err := htmlcatalog.Write(ctx, tree, htmlcatalog.Options{}); err != nil {
		return report, fmt.Errorf("write the catalog page of %s: %w", tree.Location(), err)
	}
	return report, replicaErr
}

// Seal brings what catalog.json says of the tree in step with it and
// signs it with key, pinning the change records: what a signing command
// that failed after recording its changes still does, so that its record
// (a refused key change, a re-release) is vouched for too. The registry
// replicas and the catalog page wait for the next refresh.
func Seal(ctx context.Context, tree *layout.Tree, key *signing.SigningKey) (*Report, error) {
	report := &Report{}
	if _, err := tree.DescribeCatalog(ctx); err != nil {
		return report, fmt.Errorf("describe the providers in %s of %s: %w", layout.CatalogPath, tree.Location(), err)
	}
	return report, seal(ctx, tree, key, report)
}

// seal brings catalog.json's archive listing in step with the tree and,
// with a key, signs it.
func seal(ctx context.Context, tree *layout.Tree, key *signing.SigningKey, report *Report) error {
	var s layout.Sealer
	if key != nil {
		s, report.SignedBy = key, key.KeyID()
	}
	var err error
	if report.Seal, err = tree.SealCatalog(ctx, s); err != nil {
		return fmt.Errorf("seal %s of %s: %w", layout.CatalogPath, tree.Location(), err)
	}
	return nil
}

// location is where the tree's replica is, for messages.
func location(tree *layout.Tree) string {
	return strings.TrimSuffix(tree.Location(), "/") + "/" + replica.Dir
}

// Lines say what a refresh wrote and how clients use it, for people: the
// replica's counts, its warnings and the CLI configuration blocks.
func (r *Report) Lines() []string {
	if r == nil {
		return nil
	}
	var out []string
	if r.Seal.Warning != "" {
		out = append(out, "warning  "+r.Seal.Warning)
	}
	if r.Seal.Signed {
		out = append(out, fmt.Sprintf("signed %s (%s) with key %s", layout.CatalogSignaturePath, plural.Count(r.Seal.Listed, "archive"), r.SignedBy))
	}
	if r.Replica == nil {
		return out
	}
	rep := r.Replica
	what := "module registry"
	if r.ProviderReplica {
		what = "registry replica"
	}
	for _, w := range rep.Warnings {
		out = append(out, "warning  "+what+": "+w)
	}
	if r.ProviderReplica {
		out = append(out, fmt.Sprintf("registry replica in %s: %s, %s, %s", r.Location, plural.Count(rep.Providers, "provider"), plural.Count(rep.Versions, "version"), plural.Count(rep.Packages, "package")))
	} else {
		out = append(out, fmt.Sprintf("module registry in %s: %s", r.Location, plural.Count(rep.Modules, "module")))
	}
	for _, h := range rep.Hosts {
		block := replica.ServicesBlock(h, "https://MIRROR/", rep.Services[h])
		out = append(out, "  "+strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n  "))
	}
	return out
}

package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/dest"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// output is one --out destination.
type output = dest.Destination

type outputs []*output

// Destinations say how to open the destinations that are not directories.
type Destinations struct {
	// S3 configures s3:// destinations (the environment, the CA).
	S3 s3store.Config
	// OCI configures oci:// and oci-layout:// destinations.
	OCI ocistore.Config
	// OverwriteOCITags lets a build re-point a version tag that holds
	// other packages than the release brings; by default that is refused.
	OverwriteOCITags bool
	// WorkDir is the workspace of a build with no local directory
	// destination (partial downloads kept there resume in the next run);
	// "" means a temporary directory.
	WorkDir string
}

// openOutputs opens every --out destination for planning, without writing
// anything yet.
func openOutputs(ctx context.Context, refs []string, kind layout.Kind, d Destinations) (outputs, error) {
	var outs outputs
	seen := map[string]string{}
	for _, ref := range refs {
		o, err := openOutput(ctx, ref, kind, d)
		if err != nil {
			return nil, err
		}
		key := o.Location()
		if first, dup := seen[key]; dup {
			return nil, &InputError{fmt.Errorf("--out %s and --out %s are the same destination", first, ref)}
		}
		seen[key] = ref
		outs = append(outs, o)
	}
	if len(outs) == 0 {
		return nil, &InputError{errors.New("--out names no destination")}
	}
	return outs, nil
}

func openOutput(ctx context.Context, ref string, kind layout.Kind, d Destinations) (*output, error) {
	o, err := dest.Open(ctx, ref, kind, dest.Config{S3: d.S3, OCI: d.OCI})
	var input *dest.InputError
	if errors.As(err, &input) {
		return nil, &InputError{fmt.Errorf("--out %w", input.Err)}
	}
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	return o, nil
}

// trees are the destinations that keep a mirror tree, in order.
func (outs outputs) trees() []*layout.Tree {
	var trees []*layout.Tree
	for _, o := range outs {
		if o.Tree != nil {
			trees = append(trees, o.Tree)
		}
	}
	return trees
}

// packages is the first destination, to compute lock files from.
func (outs outputs) packages() mirror.Packages {
	if o := outs[0]; o.OCI != nil {
		return o.OCI
	}
	return outs[0].Tree
}

// dests are the destinations as the build publishes into them, in order.
func (outs outputs) dests(overwrite bool) []mirror.Destination {
	var dests []mirror.Destination
	for _, o := range outs {
		if o.OCI != nil {
			dests = append(dests, o.OCI.Destination(overwrite))
		} else {
			dests = append(dests, o.Tree.Destination())
		}
	}
	return dests
}

// hasRegistry reports whether a destination is an OCI registry or layout.
func (outs outputs) hasRegistry() bool {
	for _, o := range outs {
		if o.OCI != nil {
			return true
		}
	}
	return false
}

// lock takes every destination's lock, in order, and opens the workspace:
// in the first local directory's private directory (so publishing there
// is a hard link), else in WorkDir. release undoes both.
func (outs outputs) lock(ctx context.Context, wait time.Duration, workDir string) (*layout.Workspace, func() error, error) {
	var unlocks []func() error
	release := func() error {
		var errs []error
		for _, u := range unlocks {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	for _, o := range outs {
		if o.Store == nil {
			continue // a registry: concurrent pushes merge under the tag
		}
		unlock, err := o.Store.Lock(ctx, wait, layout.Publish)
		if err != nil {
			return nil, nil, errors.Join(err, release())
		}
		unlocks = append(unlocks, unlock)
	}
	work, err := layout.OpenWorkspace(outs.workspaceDir(workDir))
	if err != nil {
		return nil, nil, errors.Join(err, release())
	}
	return work, func() error { return errors.Join(work.Close(), release()) }, nil
}

// workspaceDir is the first local destination's private directory, else a
// directory of workDir named after the destinations, so the next run of
// the same build finds its partial downloads.
func (outs outputs) workspaceDir(workDir string) string {
	for _, o := range outs {
		if o.Local != nil {
			return filepath.Join(o.Local.Root(), layout.PrivateDirName)
		}
	}
	var names []string
	for _, o := range outs {
		names = append(names, o.Location())
	}
	sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
	if workDir == "" {
		workDir = filepath.Join(os.TempDir(), "tfmirror")
	}
	return filepath.Join(workDir, "workspace-"+hex.EncodeToString(sum[:8]))
}

// materialize writes each directory destination's filesystem view, for a
// filesystem layout.
func (outs outputs) materialize(ctx context.Context, work *layout.Workspace, kind layout.Kind, limits hashing.ZipLimits) error {
	if kind == layout.Network {
		return nil
	}
	for _, o := range outs {
		if o.Tree == nil {
			continue
		}
		if err := layout.Materialize(ctx, o.Tree, work, o.Dir, kind, limits); err != nil {
			return fmt.Errorf("write the %s filesystem mirror %s: %w", kind, o.Dir, err)
		}
	}
	return nil
}

// checkRegistries fails a build before any download when an OCI
// destination cannot take it: a repository template that does not give
// each required provider a repository of its own (an input error), or a
// registry that cannot be reached or refuses the credentials, asked once
// per registry host.
func (outs outputs) checkRegistries(ctx context.Context, reqs []mirror.Requirement) error {
	for _, o := range outs {
		if o.OCI == nil {
			continue
		}
		hosts := map[string]addrs.Provider{} // a provider per registry host
		for _, req := range reqs {
			repo, err := o.OCI.Repository(req.Provider)
			if err != nil {
				return &InputError{fmt.Errorf("--out %s: %w", o.Ref, err)}
			}
			host, _, _ := strings.Cut(repo, "/")
			if _, seen := hosts[host]; !seen {
				hosts[host] = req.Provider
			}
		}
		for _, host := range slices.Sorted(maps.Keys(hosts)) {
			if err := o.OCI.Ping(ctx, hosts[host]); err != nil {
				return fmt.Errorf("nothing was downloaded: %w", err)
			}
		}
	}
	return nil
}

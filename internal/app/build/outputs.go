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
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// outputs are the build's destinations, in the order given.
type outputs []*endpoint.Destination

// openOutputs opens every destination for planning, without writing
// anything yet.
func openOutputs(ctx context.Context, raw []string, kind layout.Kind, overwrite bool, s endpoint.Settings) (outputs, error) {
	var outs outputs
	seen := map[string]string{}
	for _, name := range raw {
		ref, err := endpoint.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("--out %w", err)
		}
		if err := ref.Accept("--out", endpoint.Dir, endpoint.S3, endpoint.OCI, endpoint.OCILayout); err != nil {
			return nil, err
		}
		d, err := endpoint.OpenDestination(ctx, ref, endpoint.DestinationOptions{Layout: kind, OverwriteOCITags: overwrite}, s)
		if err != nil {
			return nil, fmt.Errorf("--out %w", err)
		}
		key := d.Location()
		if first, dup := seen[key]; dup {
			return nil, inputerr.Wrap(fmt.Errorf("--out %s and --out %s are the same destination", first, name))
		}
		seen[key] = name
		outs = append(outs, d)
	}
	return outs, nil
}

// locations name the destinations, in order.
func (outs outputs) locations() []string {
	out := make([]string, len(outs))
	for i, o := range outs {
		out[i] = o.Location()
	}
	return out
}

// dests are the destinations as the build publishes into them.
func (outs outputs) dests() []mirror.Destination {
	out := make([]mirror.Destination, len(outs))
	for i, o := range outs {
		out[i] = o.Dest
	}
	return out
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

// registries are the OCI registries and layouts.
func (outs outputs) registries() []*ocistore.Store {
	var regs []*ocistore.Store
	for _, o := range outs {
		if o.Registry != nil {
			regs = append(regs, o.Registry)
		}
	}
	return regs
}

// packages is the first destination, to compute lock files from.
func (outs outputs) packages() mirror.Packages {
	if o := outs[0]; o.Registry != nil {
		return o.Registry
	}
	return outs[0].Tree
}

// lock takes every destination's lock, in order, and opens the workspace:
// in the first local directory's private directory (so publishing there
// is a hard link), else in cacheDir. release undoes both.
func (outs outputs) lock(ctx context.Context, wait time.Duration, cacheDir string) (*layout.Workspace, func() error, error) {
	var unlocks []func() error
	release := func() error {
		var errs []error
		for _, u := range unlocks {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	for _, o := range outs {
		unlock, err := o.Lock(ctx, wait, layout.Publish)
		if err != nil {
			return nil, nil, errors.Join(err, release())
		}
		unlocks = append(unlocks, unlock)
	}
	work, err := layout.OpenWorkspace(outs.workspaceDir(cacheDir))
	if err != nil {
		return nil, nil, errors.Join(err, release())
	}
	return work, func() error { return errors.Join(work.Close(), release()) }, nil
}

// workspaceDir is the first local destination's private directory, else a
// directory of cacheDir named after the destinations, so the next run of
// the same build finds its partial downloads. Builds into the same
// destinations on one host share it at the same time (two CI jobs on one
// runner, --shard workers); each works in a run of its own there
// (layout.Workspace).
func (outs outputs) workspaceDir(cacheDir string) string {
	for _, o := range outs {
		if o.Local != nil {
			return filepath.Join(o.Local.Root(), layout.PrivateDirName)
		}
	}
	sum := sha256.Sum256([]byte(strings.Join(outs.locations(), "\n")))
	if cacheDir == "" {
		cacheDir = filepath.Join(os.TempDir(), "tfmirror")
	}
	return filepath.Join(cacheDir, "workspace-"+hex.EncodeToString(sum[:8]))
}

// materialize writes each directory destination's filesystem view, for a
// filesystem layout.
func (outs outputs) materialize(ctx context.Context, work *layout.Workspace, kind layout.Kind, limits hashing.ZipLimits) error {
	if kind == layout.Network {
		return nil
	}
	for _, o := range outs {
		if o.Local == nil {
			continue
		}
		if err := layout.Materialize(ctx, o.Tree, work, o.Ref.Path, kind, limits); err != nil {
			return fmt.Errorf("write the %s filesystem mirror %s: %w", kind, o.Ref.Path, err)
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
		if o.Registry == nil {
			continue
		}
		hosts := map[string]addrs.Provider{} // a provider per registry host
		for _, req := range reqs {
			repo, err := o.Registry.Repository(req.Provider)
			if err != nil {
				return inputerr.Wrap(fmt.Errorf("--out %s: %w", o.Ref, err))
			}
			host, _, _ := strings.Cut(repo, "/")
			if _, seen := hosts[host]; !seen {
				hosts[host] = req.Provider
			}
		}
		for _, host := range slices.Sorted(maps.Keys(hosts)) {
			if err := o.Registry.Ping(ctx, hosts[host]); err != nil {
				return fmt.Errorf("nothing was downloaded: %w", err)
			}
		}
	}
	return nil
}

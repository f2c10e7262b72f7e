package build

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/layout"
)

// output is one --out destination: the directory the user named and the
// store of the network tree it keeps (the directory itself, or the store
// behind a filesystem layout).
type output struct {
	dir   string
	store *layout.DirStore
	tree  *layout.Tree
}

type outputs []*output

// openOutputs opens every --out destination for planning, without writing
// anything yet.
func openOutputs(dirs []string, kind layout.Kind) (outputs, error) {
	var outs outputs
	seen := map[string]string{}
	for _, dir := range dirs {
		if scheme, _, ok := strings.Cut(dir, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
			return nil, &InputError{fmt.Errorf("--out %s: %s:// destinations are not supported yet; name a directory", dir, scheme)}
		}
		store, err := layout.NewDirStore(layout.NetworkRoot(dir, kind))
		if err != nil {
			return nil, &InputError{fmt.Errorf("--out %s: %w", dir, err)}
		}
		if first, dup := seen[store.Root()]; dup {
			return nil, &InputError{fmt.Errorf("--out %s and --out %s are the same directory", first, dir)}
		}
		seen[store.Root()] = dir
		outs = append(outs, &output{dir: dir, store: store, tree: layout.NewTree(store)})
	}
	if len(outs) == 0 {
		return nil, &InputError{errors.New("--out names no directory")}
	}
	return outs, nil
}

func (outs outputs) trees() []*layout.Tree {
	trees := make([]*layout.Tree, len(outs))
	for i, o := range outs {
		trees[i] = o.tree
	}
	return trees
}

// lock takes every destination's lock, in order, and opens the workspace
// in the first one's private directory. release undoes both.
func (outs outputs) lock(ctx context.Context, wait time.Duration) (*layout.Workspace, func() error, error) {
	var unlocks []func() error
	release := func() error {
		var errs []error
		for _, u := range unlocks {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	for _, o := range outs {
		unlock, err := o.store.Lock(ctx, wait)
		if err != nil {
			return nil, nil, errors.Join(err, release())
		}
		unlocks = append(unlocks, unlock)
	}
	work, err := layout.OpenWorkspace(filepath.Join(outs[0].store.Root(), layout.PrivateDirName))
	if err != nil {
		return nil, nil, errors.Join(err, release())
	}
	return work, func() error { return errors.Join(work.Close(), release()) }, nil
}

// materialize writes each destination's filesystem view, for a
// filesystem layout.
func (outs outputs) materialize(ctx context.Context, work *layout.Workspace, kind layout.Kind, limits hashing.ZipLimits) error {
	if kind == layout.Network {
		return nil
	}
	for _, o := range outs {
		if err := layout.Materialize(ctx, o.tree, work, o.dir, kind, limits); err != nil {
			return fmt.Errorf("write the %s filesystem mirror %s: %w", kind, o.dir, err)
		}
	}
	return nil
}

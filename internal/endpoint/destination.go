package endpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Destination is a location opened for writing, nothing written yet: the
// port a build publishes through, and what else a writer may need of it.
type Destination struct {
	Ref Ref
	// Dest is where packages are published.
	Dest mirror.Destination
	// Tree is the network tree kept there, and Store its store; both nil
	// for an OCI registry or image layout, which holds no tree.
	Tree  *layout.Tree
	Store layout.Store
	// Local is the store of a directory (the network tree's), whose
	// private directory a build stages in; nil for any other.
	Local *layout.DirStore
	// Registry is the store of an OCI registry or image layout; nil for a
	// tree.
	Registry *ocistore.Store
}

// Location names the destination in messages, without a secret.
func (d *Destination) Location() string { return d.Dest.Location() }

// DestinationOptions say how a destination is written.
type DestinationOptions struct {
	// Layout is what a directory holds: the network mirror, or a
	// filesystem mirror (its network tree kept in .tfmirror/store). Any
	// other destination holds the network layout only.
	Layout layout.Kind
	// OverwriteOCITags lets a registry's version tag be re-pointed at
	// other packages than it names.
	OverwriteOCITags bool
}

// OpenDestination opens ref for writing, without writing anything yet.
// A directory is created when first written; an http(s):// mirror cannot
// be written (publish a directory to the web server instead).
func OpenDestination(ctx context.Context, ref Ref, opts DestinationOptions, s Settings) (*Destination, error) {
	if opts.Layout == "" {
		opts.Layout = layout.Network
	}
	if ref.Kind != Dir && opts.Layout != layout.Network {
		what := "a bucket holds a network mirror"
		if ref.Kind == OCI || ref.Kind == OCILayout {
			what = "an OCI registry holds provider packages as OpenTofu's oci_mirror reads them"
		}
		return nil, inputerr.Wrap(fmt.Errorf("%s: %s; --layout %s needs a directory", ref, what, opts.Layout))
	}
	switch ref.Kind {
	case Dir:
		if info, err := os.Stat(ref.Path); err == nil && !info.IsDir() {
			return nil, inputerr.Wrap(fmt.Errorf("%s is a file, not a directory: name the directory to publish the mirror into", ref))
		}
		if err := checkLayout(ref, opts.Layout); err != nil {
			return nil, err
		}
		store, err := layout.NewDirStore(layout.NetworkRoot(ref.Path, opts.Layout))
		if err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("%s: %w", ref, err))
		}
		tree := layout.NewTree(store)
		if err := ownedPage(ctx, tree); err != nil {
			return nil, err
		}
		return &Destination{Ref: ref, Dest: tree.Destination(), Tree: tree, Store: store, Local: store}, nil
	case S3:
		store, err := openS3(ctx, ref, s)
		if err != nil {
			return nil, err
		}
		tree := layout.NewTree(store)
		if err := ownedPage(ctx, tree); err != nil {
			return nil, err
		}
		return &Destination{Ref: ref, Dest: tree.Destination(), Tree: tree, Store: store}, nil
	case OCI, OCILayout:
		store, err := openOCI(ctx, ref, s)
		if err != nil {
			return nil, err
		}
		return &Destination{Ref: ref, Dest: store.Destination(opts.OverwriteOCITags), Registry: store}, nil
	}
	return nil, ref.Accept("a destination", Dir, S3, OCI, OCILayout)
}

// OpenTree opens a mirror tree to rewrite: a directory or a bucket (a
// registry holds no tree) that holds a network mirror (RequireMirror).
func OpenTree(ctx context.Context, ref Ref, s Settings) (*Destination, error) {
	if err := ref.Accept("the mirror", Dir, S3); err != nil {
		return nil, err
	}
	if ref.Kind == Dir {
		if layout.ExistingKind(ref.Path) == layout.Filesystem {
			return nil, inputerr.Wrap(fmt.Errorf("%s is a filesystem mirror (built with --layout packed or unpacked); this needs a network mirror's files", ref))
		}
		if _, err := os.Stat(ref.Path); err != nil {
			return nil, inputerr.Wrap(fmt.Errorf("%s: no mirror there (no such directory)", ref))
		}
	}
	d, err := OpenDestination(ctx, ref, DestinationOptions{}, s)
	if err != nil {
		return nil, err
	}
	if err := RequireMirror(ctx, ref, d.Tree); err != nil {
		return nil, err
	}
	return d, nil
}

// ownedPage refuses a tree whose index.html someone else wrote (a web
// root named by mistake): the catalog page would replace it.
func ownedPage(ctx context.Context, tree *layout.Tree) error {
	err := htmlcatalog.Owned(ctx, tree)
	var foreign *htmlcatalog.ForeignPageError
	if errors.As(err, &foreign) {
		return inputerr.Wrap(err)
	}
	return err
}

// Lock takes the destination's writer lock in mode, waiting up to wait
// for the writers it excludes, and returns its release. An OCI registry
// or layout has no lock: concurrent pushes merge under the tag.
func (d *Destination) Lock(ctx context.Context, wait time.Duration, mode layout.LockMode) (func() error, error) {
	if d.Store == nil {
		return func() error { return nil }, nil
	}
	return d.Store.Lock(ctx, wait, mode)
}

// ErrLayoutMismatch means a directory holds a mirror of another layout
// than the one asked for.
var ErrLayoutMismatch = errors.New("the destination has another layout")

// checkLayout refuses a directory that holds a mirror of another layout.
func checkLayout(ref Ref, kind layout.Kind) error {
	switch existing := layout.ExistingKind(ref.Path); {
	case existing == layout.Filesystem && kind == layout.Network:
		return inputerr.Wrap(fmt.Errorf("%w: %s is a filesystem mirror (built with --layout packed or unpacked), not a network mirror", ErrLayoutMismatch, ref))
	case existing == layout.Network && kind != layout.Network:
		return inputerr.Wrap(fmt.Errorf("%w: %s is a network mirror, not a %s filesystem mirror", ErrLayoutMismatch, ref, kind))
	}
	return nil
}

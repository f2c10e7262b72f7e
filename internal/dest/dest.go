// Package dest opens the destinations a mirror tree is written to, from
// the names users give them: a local directory, s3://BUCKET/PREFIX/ for a
// bucket of an S3-compatible store, oci://REPOSITORY_TEMPLATE for an OCI
// registry and oci-layout://DIRECTORY for OCI image layouts. It owns that naming and nothing
// else: what is written, and in which order, is the tree's (package
// layout), and how each store keeps its promises is the store's.
package dest

import (
	"context"
	"fmt"
	"strings"

	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/layout"
)

// Destination is an opened destination: its store, not locked yet, and
// the network tree it keeps; or, for an OCI registry or image layout,
// which holds no tree, the registry's store.
type Destination struct {
	Ref   string           // as the user named it
	Dir   string           // the directory; "" for an object store or a registry
	Local *layout.DirStore // nil for an object store or a registry
	Store layout.Store     // nil for a registry
	Tree  *layout.Tree     // nil for a registry
	OCI   *ocistore.Store  // set for a registry only
}

// Location names the destination in messages, without a secret.
func (d *Destination) Location() string {
	if d.OCI != nil {
		return d.OCI.Location()
	}
	return d.Store.Location()
}

// Config says how to open destinations that are not directories.
type Config struct {
	S3  s3store.Config
	OCI ocistore.Config
}

// InputError is a destination named wrongly: a scheme tfmirror does not
// know, a layout a bucket cannot hold, a bad directory.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// IsBucket reports whether ref names an object store rather than a
// directory.
func IsBucket(ref string) bool { return strings.HasPrefix(ref, "s3://") }

// Open opens ref for writing a tree of kind, without writing anything
// yet. A bucket holds only the network layout. A directory of a
// filesystem layout keeps its network tree in its private directory.
func Open(ctx context.Context, ref string, kind layout.Kind, cfg Config) (*Destination, error) {
	scheme, _, hasScheme := strings.Cut(ref, "://")
	switch {
	case ocistore.IsURI(ref):
		if kind != layout.Network {
			return nil, &InputError{fmt.Errorf("%s: an OCI registry holds provider packages as OpenTofu's oci_mirror reads them; --layout %s needs a directory", ref, kind)}
		}
		store, err := ocistore.New(ctx, ref, cfg.OCI)
		if err != nil {
			return nil, &InputError{err} // a template or layout path that cannot be used
		}
		return &Destination{Ref: ref, OCI: store}, nil
	case hasScheme && scheme == "s3":
		if kind != layout.Network {
			return nil, &InputError{fmt.Errorf("%s: a bucket holds a network mirror; --layout %s needs a directory", ref, kind)}
		}
		store, err := s3store.New(ctx, ref, cfg.S3)
		if err != nil {
			return nil, err // the store's error names the bucket
		}
		return &Destination{Ref: ref, Store: store, Tree: layout.NewTree(store)}, nil
	case hasScheme && !strings.ContainsAny(scheme, `/\`):
		return nil, &InputError{fmt.Errorf("%s: %s:// destinations are not supported; name a directory, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE or oci-layout://DIRECTORY", ref, scheme)}
	}
	store, err := layout.NewDirStore(layout.NetworkRoot(ref, kind))
	if err != nil {
		return nil, &InputError{fmt.Errorf("%s: %w", ref, err)}
	}
	return &Destination{Ref: ref, Dir: ref, Local: store, Store: store, Tree: layout.NewTree(store)}, nil
}

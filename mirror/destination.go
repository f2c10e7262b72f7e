package mirror

import (
	"context"
	"io"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Destination is where a build publishes: a network mirror tree in a
// directory or a bucket (layout.TreeDestination), or an OCI registry or
// image layout (internal/ocistore's Destination). It is the one port every
// writer of packages goes through; mirror/desttest holds every
// implementation to the same contract.
//
// An implementation guarantees what clients see stays consistent: a
// package appears complete or not at all, never listed before its bytes
// are in place, and what another writer published is never lost.
type Destination interface {
	// Location names the destination in messages; it never holds a secret.
	Location() string
	// Held returns the queried packages the destination holds complete,
	// as clients read them, with the bytes its provenance records: a
	// rebuild keeps them without asking the origin. With verify it
	// re-hashes what it holds, read again from where clients read it,
	// instead of trusting recorded sizes or digests (metadata, a
	// content address). A package it cannot tell about is not held.
	Held(ctx context.Context, p addrs.Provider, queries []layout.HeldQuery, verify bool) ([]layout.HeldPackage, error)
	// PutArchiveAhead takes a release's checked archive before the
	// publication that lists it, unseen by clients until then (a file no
	// document lists, a blob no manifest names), so that uploads overlap
	// the release's other downloads. A destination that gains nothing by
	// it (a local directory) returns nil and writes nothing.
	PutArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a layout.Archive) error
	// Publish makes a release visible, merged with what the destination
	// holds of the version under the Repair policy: a package it holds
	// with other bytes is a conflict, never replaced. With
	// rel.VerifyExisting a package already there is compared by its bytes
	// read again, and one damaged in place (bytes that are not the
	// digest it is listed with) is replaced, or the publication fails
	// saying the destination keeps it.
	Publish(ctx context.Context, rel layout.Release) error
	// HeldModule says what the destination holds of a module version.
	HeldModule(ctx context.Context, m addrs.Module, v addrs.Version) (layout.HeldModule, error)
	// PublishModule publishes a module version's package (at r.Staged,
	// checked by the caller against r.Record).
	PublishModule(ctx context.Context, r layout.ModuleRelease) error
	// OpenModuleArchive streams the package of a module version it holds.
	OpenModuleArchive(ctx context.Context, m addrs.Module, v addrs.Version) (io.ReadCloser, error)
}

// localArchiver is implemented by destinations on the local filesystem,
// whose archives a build reads in place instead of downloading them again.
type localArchiver interface {
	LocalArchive(p addrs.Provider, v addrs.Version, plat addrs.Platform) (string, bool)
}

var _ Destination = layout.TreeDestination{}
var _ localArchiver = layout.TreeDestination{}

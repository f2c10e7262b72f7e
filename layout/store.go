package layout

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"time"
)

// Reader is where a built mirror is read from: a directory, a published
// URL, a bucket. It is the read half of the destination seam, and all that
// verify, lock and the incremental planner need.
//
// Paths are slash-separated and relative to the mirror's root. A missing
// file is an error wrapping fs.ErrNotExist.
type Reader interface {
	// Location names the mirror in messages (a directory, a URL); it never
	// holds a secret.
	Location() string
	// ReadFile returns a whole file, refusing one larger than limit bytes
	// without reading past the limit.
	ReadFile(ctx context.Context, rel string, limit int64) ([]byte, error)
	// Open streams a file such as an archive.
	Open(ctx context.Context, rel string) (io.ReadCloser, error)
	// Stat describes a file without reading it.
	Stat(ctx context.Context, rel string) (FileInfo, error)
}

// Store is a destination a mirror tree is published to: the seam every
// writer of a tree goes through (build, bundle import, the registry
// replica) and that new destinations implement.
//
// An implementation guarantees:
//   - Put is atomic: a reader of rel sees the old content or the new
//     content, never a mix, an empty file or a partial one, whatever
//     happens to the writing process (a crash leaves the old content).
//   - Put returns only once the content is durable (fsynced, or
//     acknowledged by the server), so a later Put that refers to it (an
//     index naming a version document) can never become visible first.
//     Publish order is kept by the caller issuing Puts one after another
//     in that order; a store must not reorder or batch them.
//   - Nothing a Store keeps for itself (locks, temporary objects) is
//     visible under a path clients read: it lives under PrivateDirName,
//     and temporaries of an interrupted Put are removed by the next Lock.
//   - Lock excludes other writers of the same store (other processes
//     included) until the returned function is called; Put and Delete
//     are only called while it is held.
type Store interface {
	Reader
	// Put makes rel hold c, atomically.
	Put(ctx context.Context, rel string, c Content) error
	// Delete removes rel; deleting a missing file is not an error.
	Delete(ctx context.Context, rel string) error
	// List returns every file below the directory dir ("" for the whole
	// tree), recursively, sorted, leaving out PrivateDirName.
	List(ctx context.Context, dir string) ([]string, error)
	// Lock takes the store's write lock, waiting up to wait for another
	// writer, and removes what interrupted writers left behind.
	Lock(ctx context.Context, wait time.Duration) (unlock func() error, err error)
}

// Content is what a Put publishes: bytes in memory (documents) or a local
// file (archives), which the store copies, links or uploads and never
// changes unless Move allows it.
type Content struct {
	Data []byte
	File string // used when Data is nil
	// Move lets a local store move File into place instead of linking or
	// copying it: the caller no longer needs it.
	Move bool
}

// FileInfo describes a file of a store.
type FileInfo struct {
	Size int64
	// SHA256 is the content's digest when the store knows it without
	// reading the content (object metadata); zero otherwise.
	SHA256 [sha256.Size]byte
}

// ErrReadOnly is returned by a Tree asked to write through a Reader that is
// not a Store, or a Store whose lock is not held.
var ErrReadOnly = errors.New("the mirror was opened for reading only")

// ErrNotRegular means a store holds something other than a regular file
// at a path (a link, a directory, a device).
var ErrNotRegular = errors.New("not a regular file")

// localPather is implemented by stores whose files are on the local
// filesystem, so callers can hash or link them in place.
type localPather interface {
	localPath(rel string) string
}

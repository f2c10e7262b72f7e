package layout

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
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
//     Publish order is kept by the caller, which issues a Put only once
//     every Put it must follow has returned (Puts of files of one kind,
//     none of which refers to another, may run at the same time); a store
//     must not reorder or batch them, and must accept concurrent Puts of
//     different paths.
//   - Nothing a Store keeps for itself (locks, temporary objects) is
//     visible under a path clients read: it lives under PrivateDirName,
//     and temporaries of an interrupted Put are removed by a later
//     writer (the next Lock; in a store several publishers share, only
//     once no live writer can still own them).
//   - Lock in Exclusive mode excludes every other writer of the store
//     (other processes and machines included) until the returned
//     function is called. Lock in Publish mode excludes Exclusive
//     holders; a store that implements Conditional lets several Publish
//     holders write at once (their Puts of documents are then
//     conditional), any other store makes Publish exclusive too. Put and
//     Delete are only called while a lock is held.
//   - Lock in Publish mode may defer writing anything until the first
//     Put or Delete (an object store does: a run that changes nothing
//     makes no write request at all); that Put then fails wrapping
//     ErrLocked if the lock cannot be had within Lock's wait.
type Store interface {
	Reader
	// Put makes rel hold c, atomically.
	Put(ctx context.Context, rel string, c Content) error
	// Delete removes rel; deleting a missing file is not an error.
	Delete(ctx context.Context, rel string) error
	// List returns every file below the directory dir ("" for the whole
	// tree), recursively, sorted, leaving out PrivateDirName.
	List(ctx context.Context, dir string) ([]string, error)
	// Lock takes the store's write lock in mode, waiting up to wait for
	// the writers it excludes, and removes what interrupted writers left
	// behind.
	Lock(ctx context.Context, wait time.Duration, mode LockMode) (unlock func() error, err error)
}

// LockMode says whom a store's write lock excludes.
type LockMode int

const (
	// Publish is the lock of a writer that adds to a tree and merges its
	// documents (build, bundle import, the registry replica). It
	// excludes Exclusive holders; whether it excludes other Publish
	// holders is the store's choice (see Store).
	Publish LockMode = iota
	// Exclusive excludes every other writer: prune takes it so that it
	// never races a publication.
	Exclusive
)

func (m LockMode) String() string {
	if m == Exclusive {
		return "exclusive"
	}
	return "publish"
}

// Conditional is implemented by stores several writers may publish into
// at once. The tree then reads each document with its tag, writes it back
// only if it still has that tag, and creates an archive only where there
// is none; when another writer got there first it plans again from what
// the store now holds, so concurrent publications never lose each
// other's versions.
//
// That holds only if the conditions are enforced where the bytes are
// kept: an implementation over a remote store that could accept a
// condition without honouring it (an S3-compatible server that ignores
// If-Match) must confirm, before its first write, that the store refuses
// a conditional write that must fail, and otherwise write nothing and
// fail its writes and locks with an error saying so, never falling back
// to unconditional writes.
type Conditional interface {
	// ReadTagged is ReadFile that also returns a tag naming this content
	// of rel (an ETag); another Put of rel changes it.
	ReadTagged(ctx context.Context, rel string, limit int64) (data []byte, tag string, err error)
	// PutIf is Put that succeeds only if rel still has tag, or, for an
	// empty tag, does not exist. Otherwise it writes nothing and returns
	// an error wrapping ErrChanged.
	PutIf(ctx context.Context, rel string, c Content, tag string) error
}

// ErrChanged is returned by Conditional.PutIf when another writer changed
// or created the file since it was read.
var ErrChanged = errors.New("changed by another writer since it was read")

// Content is what a Put publishes: bytes in memory (documents) or a local
// file (archives), which the store copies, links or uploads and never
// changes unless Move allows it.
type Content struct {
	Data []byte
	File string // used when Data is nil
	// Move lets a local store move File into place instead of linking or
	// copying it: the caller no longer needs it.
	Move bool
	// SHA256, when not zero, is File's digest as the caller already knows
	// it (a publication's archive, whose zh: hash it checked), so a store
	// that records digests (FileInfo.SHA256) need not read File for it.
	SHA256 [sha256.Size]byte
}

// FileInfo describes a file of a store.
type FileInfo struct {
	Size int64
	// ModTime is when the file was last written, as the store knows it
	// (a file's mtime, an object's Last-Modified); zero when unknown.
	ModTime time.Time
	// SHA256 is the content's digest when the store knows it without
	// reading the content (object metadata); zero otherwise.
	SHA256 [sha256.Size]byte
}

// ErrReadOnly is returned by a Tree asked to write through a Reader that is
// not a Store, or a Store whose lock is not held.
var ErrReadOnly = errors.New("the mirror was opened for reading only")

// ErrNotRegular means a store holds something other than a regular file
// at a path (a link, a directory, a device). It is
// atomicfile.ErrNotRegular, which a DirStore's refusals wrap.
var ErrNotRegular = atomicfile.ErrNotRegular

// ErrTooLarge is what a store's ReadFile wraps when the file is larger
// than the limit asked for.
var ErrTooLarge = atomicfile.ErrTooLarge

// localPather is implemented by stores whose files are on the local
// filesystem, so callers can hash or link them in place.
type localPather interface {
	localPath(rel string) string
}

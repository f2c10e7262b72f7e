package layout

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/syncx"
)

// Size limits of the documents a tree holds: anything larger is not a
// document tfmirror wrote.
const (
	MaxDocumentBytes = 16 << 20 // index.json, <version>.json, catalog.json, provenance
	MaxSumsBytes     = 1 << 20  // SHA256SUMS and its signature
	MaxSBOMBytes     = 16 << 20 // a package's SBOM
)

// Tree is a network mirror tree kept in a store: the one place that knows
// its files, reads them into typed values and publishes into it. A tree
// over a Reader that is not a Store (a published URL) is read-only. It is
// safe for concurrent use: publications of the same provider are
// serialized.
type Tree struct {
	r Reader
	s Store // nil when read-only

	// names serializes the publications of each provider and module
	// (lockNames).
	names syncx.KeyedMutex

	mu sync.Mutex
	// ahead holds the archives PutArchiveAhead wrote, by path, with
	// their SHA-256, until the publication that lists them takes them
	// without asking the store again.
	ahead map[string][sha256.Size]byte

	catalogMu sync.Mutex

	// writing holds a place for every write in flight into the store,
	// whichever publication makes it (applyKind).
	writing chan struct{}
	// reading holds a place for every version Held reads at once, across
	// all the providers a build asks about together: each is a parsed
	// document and provenance record in memory.
	reading chan struct{}
}

// NewTree returns the tree kept in r. It writes only if r is a Store whose
// lock the caller holds.
func NewTree(r Reader) *Tree {
	t := &Tree{r: r, ahead: make(map[string][sha256.Size]byte), writing: make(chan struct{}, maxWrites), reading: make(chan struct{}, maxHeldReads)}
	if s, ok := r.(Store); ok {
		t.s = s
	}
	return t
}

// Location names the tree's store in messages.
func (t *Tree) Location() string { return t.r.Location() }

// Reader returns the store the tree is read from.
func (t *Tree) Reader() Reader { return t.r }

// LocalPath returns where a file of the tree is on the local filesystem,
// when its store is a local directory.
func (t *Tree) LocalPath(rel string) (string, bool) {
	if l, ok := t.r.(localPather); ok {
		return l.localPath(rel), true
	}
	return "", false
}

// Dir is a local mirror directory opened for writing: its store, locked,
// the tree it holds and the workspace in its private directory. It is a
// convenience for tests and tools (the quickstart's generator); commands
// open every destination, directories included, through
// internal/endpoint and lock its store.
type Dir struct {
	*Tree
	*Workspace
	Store  *DirStore
	unlock func() error
}

// Open opens root for writing without waiting for another process's lock.
func Open(root string) (*Dir, error) {
	return OpenWait(context.Background(), root, 0)
}

// OpenWait prepares root for writing (creating it if needed): it takes the
// directory's lock, waiting up to wait for another tfmirror process to
// finish, removes what killed runs left behind, and opens its workspace.
// Close releases the lock and removes the staging area.
func OpenWait(ctx context.Context, root string, wait time.Duration) (*Dir, error) {
	store, err := NewDirStore(root)
	if err != nil {
		return nil, err
	}
	unlock, err := store.Lock(ctx, wait, Publish)
	if err != nil {
		return nil, err
	}
	work, err := OpenWorkspace(filepath.Join(store.Root(), PrivateDirName))
	if err != nil {
		_ = unlock()
		return nil, err
	}
	return &Dir{Tree: NewTree(store), Workspace: work, Store: store, unlock: unlock}, nil
}

// Root returns the directory's absolute path.
func (d *Dir) Root() string { return d.Store.Root() }

// Path returns the absolute path of a slash-separated path relative to
// the root.
func (d *Dir) Path(rel string) string { return d.Store.localPath(rel) }

// Close removes the staging area and releases the lock.
func (d *Dir) Close() error {
	err := d.Workspace.Close()
	if uerr := d.unlock(); err == nil {
		err = uerr
	}
	return err
}

// OpenExisting opens an existing directory's tree for reading only.
func OpenExisting(root string) (*Tree, error) {
	store, err := NewDirStore(root)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(store.Root())
	if err != nil {
		return nil, fmt.Errorf("open mirror tree: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("open mirror tree: %s is not a directory", root)
	}
	return NewTree(store), nil // unlocked: every write fails
}

// Release is one provider version ready to publish: archives already
// verified, and what is kept about its origin.
type Release struct {
	Provider addrs.Provider
	Version  addrs.Version
	Archives []Archive
	// Record, if set, is kept next to the archives; its provenance is
	// merged with what the tree already records for the release.
	Record *Record
	// VerifyExisting compares each archive the destination already holds
	// by its bytes, read again, instead of by a digest the store records
	// (a bucket's metadata), so that one damaged in place is found and,
	// under Repair, replaced (build --verify-existing).
	VerifyExisting bool
}

// Archive is one platform's package of a release.
type Archive struct {
	Platform addrs.Platform
	// Staged is a local file holding the verified bytes, or "" when the
	// archive is already published at its final path.
	Staged string
	Hashes []hashing.Hash
	// Move lets the tree move the staged file into place: nothing else
	// needs it any more.
	Move bool
	// SBOM, if not nil, is the package's SBOM, published beside the
	// archive (SBOMPath) before the documents that name it and named by
	// the release's provenance.
	SBOM []byte
}

// Publish makes one release visible under the Repair policy: first its
// archives and kept origin files, then its <version>.json (merged with the
// platforms already listed there), then the provider's index.json (merged
// with the versions already listed), and last catalog.json. Every document
// is read and checked before anything moves, so a refused publication
// leaves the tree as it was.
func (t *Tree) Publish(r Release) error {
	r.Archives = slices.Clone(r.Archives)
	for i := range r.Archives {
		r.Archives[i].Move = true
	}
	_, err := t.PublishAll(context.Background(), Repair, []Release{r})
	return err
}

// readDoc reads a document of the tree; missing is (nil, nil).
func (t *Tree) readDoc(ctx context.Context, rel string, limit int64) ([]byte, error) {
	data, err := t.r.ReadFile(ctx, rel, limit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	return data, nil
}

// ReadIndex returns the provider's published index, or an empty one.
func (t *Tree) ReadIndex(ctx context.Context, p addrs.Provider) (Index, error) {
	data, err := t.readDoc(ctx, IndexPath(p), MaxDocumentBytes)
	if err != nil || data == nil {
		return Index{Versions: map[string]struct{}{}}, err
	}
	idx, err := DecodeIndex(data)
	if err != nil {
		return Index{}, fmt.Errorf("existing %s: %w", IndexPath(p), err)
	}
	return idx, nil
}

// ErrNotInMirror means a mirror does not hold a provider at all.
var ErrNotInMirror = errors.New("the mirror does not hold this provider")

// Versions lists the versions the provider's index.json holds; an error
// wrapping ErrNotInMirror when it holds none.
func (t *Tree) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	data, err := t.r.ReadFile(ctx, IndexPath(p), MaxDocumentBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w: %w", p, ErrNotInMirror, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", IndexPath(p), err)
	}
	idx, err := DecodeIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IndexPath(p), err)
	}
	out, err := idx.versions()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IndexPath(p), err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: %w", p, ErrNotInMirror)
	}
	return out, nil
}

// ReadVersion returns a published <version>.json, or an empty one.
func (t *Tree) ReadVersion(ctx context.Context, p addrs.Provider, v addrs.Version) (VersionDoc, error) {
	rel := VersionPath(p, v)
	data, err := t.readDoc(ctx, rel, MaxDocumentBytes)
	if err != nil || data == nil {
		return VersionDoc{Archives: map[string]ArchiveEntry{}}, err
	}
	doc, err := DecodeVersion(data)
	if err != nil {
		return VersionDoc{}, fmt.Errorf("existing %s: %w", rel, err)
	}
	return doc, nil
}

// Digest returns the SHA-256 of a file of the tree: from the store's
// metadata where it keeps one, else by reading the file through the store
// (a local one streams it from disk, following no link). A file that is
// not regular is an error wrapping ErrNotRegular.
func (t *Tree) Digest(ctx context.Context, rel string) ([sha256.Size]byte, error) {
	return t.digest(ctx, rel, false, -1)
}

// Rehash is Digest from the file's bytes, whatever digest the store
// records for it: what --verify-existing compares, since a recorded
// digest says what was written, not what the store holds now.
func (t *Tree) Rehash(ctx context.Context, rel string) ([sha256.Size]byte, error) {
	return t.digest(ctx, rel, true, -1)
}

// digest is Digest, or with reread Rehash. A recorded digest is not
// believed for a file whose size is not size (when not negative), the
// size of the bytes it would be compared with: its bytes were replaced
// and its metadata kept, so they are hashed.
func (t *Tree) digest(ctx context.Context, rel string, reread bool, size int64) ([sha256.Size]byte, error) {
	var zero [sha256.Size]byte
	info, err := t.r.Stat(ctx, rel)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", rel, err)
	}
	if info.SHA256 != zero && !reread && (size < 0 || info.Size == size) {
		return info.SHA256, nil
	}
	return t.hashBytes(ctx, rel)
}

// hashBytes reads a file of the tree through its store and hashes it.
func (t *Tree) hashBytes(ctx context.Context, rel string) ([sha256.Size]byte, error) {
	var zero [sha256.Size]byte
	body, err := t.r.Open(ctx, rel)
	if err != nil {
		return zero, err
	}
	defer body.Close()
	w := hashing.NewWriter()
	if _, err := io.Copy(w, body); err != nil {
		return zero, fmt.Errorf("read %s: %w", rel, err)
	}
	return w.Sum(), nil
}

// Put writes a file of the tree through its store, atomically: for the
// files a tree holds besides the mirror's own (the registry replica).
func (t *Tree) Put(ctx context.Context, rel string, data []byte) error {
	if t.s == nil {
		return fmt.Errorf("write %s into %s: %w", rel, t.Location(), ErrReadOnly)
	}
	return t.apply(ctx, write{rel: rel, content: Content{Data: data}})
}

// Delete removes a file of the tree through its store.
func (t *Tree) Delete(ctx context.Context, rel string) error {
	if t.s == nil {
		return fmt.Errorf("delete %s from %s: %w", rel, t.Location(), ErrReadOnly)
	}
	return t.s.Delete(ctx, rel)
}

// List returns the files below dir, when the store can list them.
func (t *Tree) List(ctx context.Context, dir string) ([]string, error) {
	if t.s == nil {
		return nil, fmt.Errorf("list %s in %s: %w", dir, t.Location(), ErrReadOnly)
	}
	return t.s.List(ctx, dir)
}

// OpenArchive streams a package's archive from the tree.
func (t *Tree) OpenArchive(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (io.ReadCloser, error) {
	return t.r.Open(ctx, ArchivePath(p, v, plat))
}

package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// StagingDirName is the directory under the tree's root where downloads
// wait until they are verified. Nothing in it is ever referenced by an index.
const StagingDirName = PrivateDirName + "/staging"

// Tree is a network mirror tree on the local filesystem. It is safe for
// concurrent use: publications of the same provider are serialized.
type Tree struct {
	root    string
	staging string
	lock    *os.File // held while the tree is open for writing

	mu    sync.Mutex
	locks map[string]*sync.Mutex

	catalogMu sync.Mutex
	partials  map[string]bool // partial downloads in use, guarded by mu
}

// Open opens root for writing without waiting for another process's lock.
func Open(root string) (*Tree, error) {
	return OpenWait(context.Background(), root, 0)
}

// OpenWait prepares root for writing (creating it if needed): it takes the
// tree's lock, waiting up to wait for another tfmirror process to finish,
// removes what killed runs left behind, and creates a staging area. Close
// releases the lock and removes the staging area.
func OpenWait(ctx context.Context, root string, wait time.Duration) (*Tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", root, err)
	}
	if err := MkdirAll(filepath.Join(abs, PrivateDirName)); err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", root, err)
	}
	lock, err := lockTree(ctx, abs, wait)
	if err != nil {
		return nil, err
	}
	t := &Tree{root: abs, lock: lock, locks: make(map[string]*sync.Mutex)}
	if err := t.prepare(); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("open mirror tree %s: %w", root, err)
	}
	return t, nil
}

func (t *Tree) prepare() error {
	if err := removeLeftovers(t.root); err != nil {
		return err
	}
	if err := removeOldPartials(t.root); err != nil {
		return err
	}
	t.staging = filepath.Join(t.root, filepath.FromSlash(StagingDirName))
	return MkdirAll(t.staging)
}

// OpenExisting opens an existing tree for reading only: nothing can be
// staged or published through it.
func OpenExisting(root string) (*Tree, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", root, err)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open mirror tree: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("open mirror tree: %s is not a directory", root)
	}
	return &Tree{root: abs, locks: make(map[string]*sync.Mutex)}, nil
}

// Root returns the tree's absolute root directory.
func (t *Tree) Root() string { return t.root }

// Path returns the absolute path of a path relative to the root.
func (t *Tree) Path(rel string) string { return filepath.Join(t.root, rel) }

// Close removes this run's staging directory and anything left in it.
func (t *Tree) Close() error {
	if t.lock == nil {
		return nil
	}
	err := os.RemoveAll(t.staging)
	if cerr := t.lock.Close(); err == nil {
		err = cerr
	}
	t.lock = nil
	return err
}

// CreateStaged creates an empty file in the staging area. The caller writes
// it, then closes it with SyncClose before publishing it.
func (t *Tree) CreateStaged(name string) (*os.File, error) {
	if t.staging == "" {
		return nil, fmt.Errorf("create staging file for %s: the tree was opened read-only", name)
	}
	f, err := os.CreateTemp(t.staging, name+"-*")
	if err != nil {
		return nil, fmt.Errorf("create staging file for %s: %w", name, err)
	}
	return f, nil
}

// Release is one provider version ready to publish: archives already
// verified and staged (or already in place).
type Release struct {
	Provider addrs.Provider
	Version  addrs.Version
	Archives []Archive
	// Record, if set, is kept next to the archives; its provenance is
	// merged with what the tree already records for the release.
	Record *Record
}

// Archive is one platform's package of a release.
type Archive struct {
	Platform addrs.Platform
	// Staged is the path of the verified file in the staging area, or ""
	// when the archive is already published at its final path.
	Staged string
	Hashes []hashing.Hash
}

// Publish makes a release visible: first its archives and kept origin
// files, then its <version>.json (merged with the platforms already listed
// there), then the provider's index.json (merged with the versions already
// listed), and last the root catalog.json. Both
// documents are read and checked before anything moves, so a refused
// publication leaves the tree as it was.
func (t *Tree) Publish(r Release) error {
	unlock := t.lockProvider(r.Provider)
	defer unlock()
	doc, err := t.ReadVersion(r.Provider, r.Version)
	if err != nil {
		return err
	}
	idx, err := t.ReadIndex(r.Provider)
	if err != nil {
		return err
	}
	prov, err := t.readProvenance(r.Provider, r.Version)
	if err != nil {
		return err
	}
	for _, a := range r.Archives {
		if a.Staged != "" {
			if err := Rename(a.Staged, t.Path(ArchivePath(r.Provider, r.Version, a.Platform))); err != nil {
				return err
			}
		}
		doc.Archives[a.Platform.String()] = ArchiveEntry{
			Hashes: sortedHashes(a.Hashes),
			URL:    ArchiveName(r.Provider, r.Version, a.Platform),
		}
	}
	if err := t.writeRecord(r, prov); err != nil {
		return err
	}
	if err := writeJSON(t.Path(VersionPath(r.Provider, r.Version)), doc); err != nil {
		return err
	}
	idx.Versions[r.Version.String()] = struct{}{}
	if err := writeJSON(t.Path(IndexPath(r.Provider)), idx); err != nil {
		return err
	}
	return t.addToCatalog(r.Provider.String())
}

func (t *Tree) lockProvider(p addrs.Provider) func() {
	t.mu.Lock()
	l, ok := t.locks[p.String()]
	if !ok {
		l = new(sync.Mutex)
		t.locks[p.String()] = l
	}
	t.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// ReadIndex returns the provider's published index, or an empty one.
func (t *Tree) ReadIndex(p addrs.Provider) (Index, error) {
	data, err := os.ReadFile(t.Path(IndexPath(p)))
	if errors.Is(err, fs.ErrNotExist) {
		return Index{Versions: map[string]struct{}{}}, nil
	}
	if err != nil {
		return Index{}, fmt.Errorf("read %s: %w", IndexPath(p), err)
	}
	idx, err := DecodeIndex(data)
	if err != nil {
		return Index{}, fmt.Errorf("existing %s: %w", IndexPath(p), err)
	}
	return idx, nil
}

// ReadVersion returns a published <version>.json, or an empty one.
func (t *Tree) ReadVersion(p addrs.Provider, v addrs.Version) (VersionDoc, error) {
	rel := VersionPath(p, v)
	data, err := os.ReadFile(t.Path(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return VersionDoc{Archives: map[string]ArchiveEntry{}}, nil
	}
	if err != nil {
		return VersionDoc{}, fmt.Errorf("read %s: %w", rel, err)
	}
	doc, err := DecodeVersion(data)
	if err != nil {
		return VersionDoc{}, fmt.Errorf("existing %s: %w", rel, err)
	}
	return doc, nil
}

func writeJSON(path string, v any) error {
	data, err := Encode(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFile(path, data)
}

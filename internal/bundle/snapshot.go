package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/layout"
)

// snapshot is a read-only layout.Store that copies each file of a mirror
// kept in another store (a bucket) into a local directory the first time
// it is read: the first Stat, ReadFile or Open of a path downloads it, and
// every later read of that path is of the copy. Listing is the other
// store's.
//
// Reading a tree through it the way layout.Tree.Files does (catalog.json
// and the listing, each index.json, each version's documents, then the
// files they name) reads every document before the files it names, the
// reverse of publish order. A publisher writes a document only after the
// files it names, so each file a copied document names was already there
// when the document was read, and the copy is a consistent tree even when
// builds publish into the store meanwhile; each file is downloaded once,
// so what is verified is what is packed. Something deleted meanwhile (a
// prune) is missing from the copy, and verification refuses it.
//
// No copy is larger than the store says it is: a file is copied up to
// the size the store's listing gives it (a store that lists sizes, as a
// bucket does), else up to maxFile; a document up to the size documents
// may have (layout.MaxDocumentBytes: documents change while builds
// publish), SHA256SUMS and signatures up to layout.MaxSumsBytes. An
// object that goes on past its bound is refused as soon as it does,
// without writing a byte past the bound into the work area.
type snapshot struct {
	remote  layout.Store
	root    string // the local copy
	maxFile int64  // the bound of a file whose size the listing does not give

	mu      sync.Mutex
	fetched map[string]error // nil once copied; the error of a path that could not be
	listing []string         // the first listing of the whole tree
	sizes   map[string]int64 // the sizes that listing gives, if the store lists them
	listed  bool
}

// sizedLister is a store whose listing gives each object's size, as a
// bucket's does (s3store.Store).
type sizedLister interface {
	ListSizes(ctx context.Context, dir string) (map[string]int64, error)
}

// DefaultMaxFileBytes is the default of CreateOptions.MaxFileBytes: the
// default size limit of downloads.
const DefaultMaxFileBytes = 1 << 30

// ErrLargerThanListed means an object of a store went on past the size
// its listing gives it, or past the bound of its kind of file.
var ErrLargerThanListed = errors.New("the object is larger than the store says")

var _ layout.Store = (*snapshot)(nil)

// newSnapshot returns a snapshot of remote kept in root, which it
// creates; maxFile bounds a file the listing gives no size (0:
// DefaultMaxFileBytes).
func newSnapshot(remote layout.Store, root string, maxFile int64) (*snapshot, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("copy %s: %w", remote.Location(), err)
	}
	if maxFile <= 0 {
		maxFile = DefaultMaxFileBytes
	}
	return &snapshot{remote: remote, root: root, maxFile: maxFile, fetched: map[string]error{}}, nil
}

// Location names the store copied, never the local copy.
func (s *snapshot) Location() string { return s.remote.Location() }

// name is how messages name a file of the store copied: for a bucket,
// s3://BUCKET/KEY.
func (s *snapshot) name(rel string) string {
	return strings.TrimSuffix(s.remote.Location(), "/") + "/" + rel
}

func (s *snapshot) local(rel string) string {
	return filepath.Join(s.root, filepath.FromSlash(rel))
}

// ReadFile reads the copy of rel, downloading it first if needed.
func (s *snapshot) ReadFile(ctx context.Context, rel string, limit int64) ([]byte, error) {
	if err := s.fetch(ctx, rel); err != nil {
		return nil, err
	}
	f, err := os.Open(s.local(rel))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name(rel), err)
	}
	defer func() { _ = f.Close() }()
	limit = max(limit, 0)
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name(rel), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: larger than the limit of %d bytes", s.name(rel), limit)
	}
	return data, nil
}

// Open opens the copy of rel, downloading it first if needed.
func (s *snapshot) Open(ctx context.Context, rel string) (io.ReadCloser, error) {
	if err := s.fetch(ctx, rel); err != nil {
		return nil, err
	}
	f, err := os.Open(s.local(rel))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", s.name(rel), err)
	}
	return f, nil
}

// Stat describes the copy of rel, downloading it first if needed.
func (s *snapshot) Stat(ctx context.Context, rel string) (layout.FileInfo, error) {
	if err := s.fetch(ctx, rel); err != nil {
		return layout.FileInfo{}, err
	}
	info, err := os.Stat(s.local(rel))
	if err != nil {
		return layout.FileInfo{}, fmt.Errorf("read %s: %w", s.name(rel), err)
	}
	return layout.FileInfo{Size: info.Size(), ModTime: info.ModTime()}, nil
}

// List lists the store copied, and keeps its first listing of the whole
// tree, with the sizes it gives when the store lists them.
func (s *snapshot) List(ctx context.Context, dir string) ([]string, error) {
	sl, sized := s.remote.(sizedLister)
	s.mu.Lock()
	first := dir == "" && !s.listed
	s.mu.Unlock()
	if !first || !sized {
		files, err := s.remote.List(ctx, dir)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if dir == "" && !s.listed {
			s.listing, s.listed = files, true
		}
		return files, nil
	}
	sizes, err := sl.ListSizes(ctx, dir)
	if err != nil {
		return nil, err
	}
	files := slices.Sorted(maps.Keys(sizes))
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.listed {
		s.listing, s.sizes, s.listed = files, sizes, true
	}
	return files, nil
}

// bound is the most bytes the copy of rel may have, and what says so.
// Called with s.mu held.
func (s *snapshot) bound(rel string) (int64, string) {
	name := path.Base(rel)
	switch {
	case strings.HasSuffix(name, ".json"):
		return layout.MaxDocumentBytes, "the size a document may have"
	case strings.HasSuffix(name, "SHA256SUMS"), strings.HasSuffix(name, ".sig"):
		return layout.MaxSumsBytes, "the size a checksum file or signature may have"
	}
	if n, ok := s.sizes[rel]; ok {
		return n, "the size the store's listing gives it"
	}
	return s.maxFile, "the size limit of downloads (settings max_archive_bytes)"
}

// Put refuses: a snapshot is read only.
func (s *snapshot) Put(context.Context, string, layout.Content) error {
	return fmt.Errorf("%s: %w", s.Location(), layout.ErrReadOnly)
}

// Delete refuses: a snapshot is read only.
func (s *snapshot) Delete(context.Context, string) error {
	return fmt.Errorf("%s: %w", s.Location(), layout.ErrReadOnly)
}

// Lock refuses: a snapshot is read only.
func (s *snapshot) Lock(context.Context, time.Duration, layout.LockMode) (func() error, error) {
	return nil, fmt.Errorf("%s: %w", s.Location(), layout.ErrReadOnly)
}

// fetch copies rel once; a path that could not be copied keeps its error
// (one wrapping fs.ErrNotExist for a missing file).
func (s *snapshot) fetch(ctx context.Context, rel string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err, ok := s.fetched[rel]; ok {
		return err
	}
	err := s.download(ctx, rel)
	if ctx.Err() == nil {
		s.fetched[rel] = err
	}
	return err
}

func (s *snapshot) download(ctx context.Context, rel string) (err error) {
	if rel == "" || path.Clean(rel) != rel || !filepath.IsLocal(filepath.FromSlash(rel)) || strings.Contains(rel, `\`) {
		return fmt.Errorf("%s: invalid path %q in the mirror", s.Location(), rel)
	}
	if rel == layout.PrivateDirName || strings.HasPrefix(rel, layout.PrivateDirName+"/") {
		return fmt.Errorf("%s: in tfmirror's private directory %s, not part of the mirror: not packed", s.name(rel), layout.PrivateDirName)
	}
	body, err := s.remote.Open(ctx, rel)
	if err != nil {
		return err // the store's error names the object
	}
	defer func() { _ = body.Close() }()
	local := s.local(rel)
	if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
		return fmt.Errorf("copy %s: %w", s.name(rel), err)
	}
	f, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("copy %s: another file of the mirror has the same local name (names that differ only in case?)", s.name(rel))
		}
		return fmt.Errorf("copy %s: %w", s.name(rel), err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(local)
		}
	}()
	limit, why := s.bound(rel)
	n, err := io.Copy(f, io.LimitReader(body, limit))
	if err == nil && n == limit {
		// One byte more tells an object that ends at its bound from one
		// that goes on.
		var one [1]byte
		if m, _ := io.ReadFull(body, one[:]); m > 0 {
			err = fmt.Errorf("%w: more than %d bytes, %s; refused", ErrLargerThanListed, limit, why)
		}
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("read %s: %w", s.name(rel), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("copy %s: %w", s.name(rel), err)
	}
	return nil
}

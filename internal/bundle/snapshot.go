package bundle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
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
type snapshot struct {
	remote layout.Store
	root   string // the local copy

	mu      sync.Mutex
	fetched map[string]error // nil once copied; the error of a path that could not be
	listing []string         // the first listing of the whole tree
	listed  bool
}

var _ layout.Store = (*snapshot)(nil)

// newSnapshot returns a snapshot of remote kept in root, which it creates.
func newSnapshot(remote layout.Store, root string) (*snapshot, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("copy %s: %w", remote.Location(), err)
	}
	return &snapshot{remote: remote, root: root, fetched: map[string]error{}}, nil
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
// tree.
func (s *snapshot) List(ctx context.Context, dir string) ([]string, error) {
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
	if _, err := io.Copy(f, body); err != nil {
		_ = f.Close()
		return fmt.Errorf("read %s: %w", s.name(rel), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("copy %s: %w", s.name(rel), err)
	}
	return nil
}

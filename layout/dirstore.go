package layout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// DirStore is a mirror tree in a local directory, the first Store. Puts
// write a temporary file in the target's directory, fsync it, make it
// world-readable and rename it into place, then fsync the directory; a
// local file is hard-linked to the temporary name instead of copied where
// the filesystem allows.
type DirStore struct {
	root string

	mu   sync.Mutex
	lock *os.File // held while the store is locked for writing
}

var _ Store = (*DirStore)(nil)

// NewDirStore returns the store of the directory root. Nothing is created
// until Lock.
func NewDirStore(root string) (*DirStore, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("mirror directory %s: %w", root, err)
	}
	return &DirStore{root: abs}, nil
}

// Root is the store's absolute directory.
func (d *DirStore) Root() string { return d.root }

// Location names the store in messages.
func (d *DirStore) Location() string { return d.root }

func (d *DirStore) localPath(rel string) string {
	return filepath.Join(d.root, filepath.FromSlash(rel))
}

// ReadFile reads a whole file of at most limit bytes.
func (d *DirStore) ReadFile(_ context.Context, rel string, limit int64) ([]byte, error) {
	f, err := os.Open(d.localPath(rel))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: larger than the limit of %d bytes", rel, limit)
	}
	return data, nil
}

// Open opens a file for reading.
func (d *DirStore) Open(_ context.Context, rel string) (io.ReadCloser, error) {
	return os.Open(d.localPath(rel))
}

// Stat describes a regular file; anything else is an error.
func (d *DirStore) Stat(_ context.Context, rel string) (FileInfo, error) {
	info, err := os.Lstat(d.localPath(rel))
	if err != nil {
		return FileInfo{}, err
	}
	if !info.Mode().IsRegular() {
		return FileInfo{}, fmt.Errorf("%w: the destination has a %s here, not a file", ErrNotRegular, info.Mode().Type())
	}
	return FileInfo{Size: info.Size()}, nil
}

// Put atomically replaces rel with c. A local file that already is the
// target is left alone.
func (d *DirStore) Put(_ context.Context, rel string, c Content) error {
	if err := d.checkLocked(); err != nil {
		return err
	}
	dst := d.localPath(rel)
	if c.Data != nil || c.File == "" {
		return WriteFile(dst, c.Data)
	}
	if same(c.File, dst) {
		return nil
	}
	if c.Move {
		if err := MkdirAll(filepath.Dir(dst)); err != nil {
			return err
		}
		if os.Rename(c.File, dst) == nil {
			return syncDir(filepath.Dir(dst))
		}
	}
	return linkOrCopy(c.File, dst)
}

// Delete removes a file, and the directories it leaves empty.
func (d *DirStore) Delete(_ context.Context, rel string) error {
	if err := d.checkLocked(); err != nil {
		return err
	}
	if err := os.Remove(d.localPath(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", rel, err)
	}
	// Drop the directories left empty, as an object store has none.
	for dir := path.Dir(rel); dir != "." && dir != PrivateDirName; dir = path.Dir(dir) {
		if os.Remove(d.localPath(dir)) != nil {
			break
		}
	}
	return nil
}

// List returns every regular file below dir, without the private
// directory.
func (d *DirStore) List(_ context.Context, dir string) ([]string, error) {
	var out []string
	start := d.localPath(dir)
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == start {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case e.IsDir() && rel == PrivateDirName:
			return filepath.SkipDir
		case e.Type().IsRegular():
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path.Join(d.root, dir), err)
	}
	slices.Sort(out)
	return out, nil
}

// Lock creates the directory if needed, takes its lock (waiting up to
// wait for another tfmirror process) and removes what killed runs left
// behind.
func (d *DirStore) Lock(ctx context.Context, wait time.Duration) (func() error, error) {
	if err := MkdirAll(filepath.Join(d.root, PrivateDirName)); err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", d.root, err)
	}
	lock, err := lockTree(ctx, d.root, wait)
	if err != nil {
		return nil, err
	}
	if err := removeLeftovers(d.root); err != nil {
		_ = lock.Close()
		return nil, fmt.Errorf("open mirror tree %s: %w", d.root, err)
	}
	d.mu.Lock()
	d.lock = lock
	d.mu.Unlock()
	return func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.lock == nil {
			return nil
		}
		err := d.lock.Close()
		d.lock = nil
		return err
	}, nil
}

func (d *DirStore) checkLocked() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lock == nil {
		return fmt.Errorf("write to %s: %w", d.root, ErrReadOnly)
	}
	return nil
}

// same reports whether a and b are the same file.
func same(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

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

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// DirStore is a mirror tree in a local directory, the first Store. Puts
// write a temporary file in the target's directory, fsync it, make it
// world-readable and rename it into place, then fsync the directory; a
// local file is hard-linked to the temporary name instead of copied where
// the filesystem allows.
//
// The directory is hostile input too (a shared workspace, a directory a
// web server publishes): every file operation beneath the root goes
// through os.Root and never follows a symbolic link. A link, a device or
// anything but a regular file where a file is read or written, and a link
// where a directory is, is an error naming the path; nothing is read from
// it or written through it. The root itself may be a link.
type DirStore struct {
	root string

	mu     sync.Mutex
	unlock func() error // set while the store is locked for writing
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

// open opens the store's directory for one operation. Every file
// operation goes through it, so none follows a link below the root.
func (d *DirStore) open() (*atomicfile.Root, error) {
	return atomicfile.OpenRoot(d.root)
}

// ReadFile reads a whole regular file of at most limit bytes.
func (d *DirStore) ReadFile(_ context.Context, rel string, limit int64) ([]byte, error) {
	t, err := d.open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = t.Close() }()
	return t.ReadFile(rel, limit)
}

// Open opens a regular file for reading.
func (d *DirStore) Open(_ context.Context, rel string) (io.ReadCloser, error) {
	t, err := d.open()
	if err != nil {
		return nil, err
	}
	defer func() { _ = t.Close() }()
	return t.OpenFile(rel, os.O_RDONLY, 0)
}

// Stat describes a regular file; anything else is an error.
func (d *DirStore) Stat(_ context.Context, rel string) (FileInfo, error) {
	t, err := d.open()
	if err != nil {
		return FileInfo{}, err
	}
	defer func() { _ = t.Close() }()
	info, err := t.StatFile(rel)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Size: info.Size(), ModTime: info.ModTime()}, nil
}

// Put atomically replaces rel with c. A local file that already is the
// target is left alone. Something other than a regular file at rel, or a
// link on the way to it, is an error naming the path.
func (d *DirStore) Put(_ context.Context, rel string, c Content) error {
	if err := d.checkLocked(); err != nil {
		return err
	}
	t, err := d.open()
	if err != nil {
		return fmt.Errorf("write %s: %w", d.localPath(rel), err)
	}
	defer func() { _ = t.Close() }()
	if c.Data != nil || c.File == "" {
		return t.WriteFile(rel, c.Data)
	}
	if err := t.PrepareTarget(rel); err != nil {
		return fmt.Errorf("publish %s: %w", t.Path(rel), err)
	}
	if sameFile(c.File, t, rel) {
		return nil
	}
	if c.Move {
		return t.Place(c.File, rel, true)
	}
	return linkOrCopy(c.File, t, rel)
}

// Delete removes a file, and the directories it leaves empty. A link on
// the way to it is an error.
func (d *DirStore) Delete(_ context.Context, rel string) error {
	if err := d.checkLocked(); err != nil {
		return err
	}
	t, err := d.open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", rel, err)
	}
	defer func() { _ = t.Close() }()
	if err := t.Remove(rel); err != nil {
		return fmt.Errorf("delete %s: %w", rel, err)
	}
	// Drop the directories left empty, as an object store has none,
	// stopping at the first one missing or not empty.
	for dir := path.Dir(rel); dir != "." && dir != PrivateDirName; dir = path.Dir(dir) {
		if _, err := t.Lstat(dir); err != nil || t.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// List returns every regular file below dir, without the private
// directory. Links are neither listed nor followed; a link on the way to
// dir is an error.
func (d *DirStore) List(_ context.Context, dir string) ([]string, error) {
	t, err := d.open()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path.Join(d.root, dir), err)
	}
	defer func() { _ = t.Close() }()
	start := dir
	if start == "" {
		start = "."
	}
	if err := t.CheckDir(start); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %s: %w", path.Join(d.root, dir), err)
	}
	out, err := walkFiles(t, start)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", path.Join(d.root, dir), err)
	}
	slices.Sort(out)
	return out, nil
}

// walkFiles lists the regular files below start, leaving out the private
// directory and never descending into a link.
func walkFiles(t *atomicfile.Root, start string) ([]string, error) {
	var out []string
	err := fs.WalkDir(t.FS(), start, func(rel string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && rel == PrivateDirName:
			return fs.SkipDir
		case e.Type().IsRegular():
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// Lock creates the directory if needed, takes its lock (waiting up to
// wait for another tfmirror process) and removes what killed runs left
// behind. A directory is not Conditional, so its lock is exclusive in
// either mode.
func (d *DirStore) Lock(ctx context.Context, wait time.Duration, _ LockMode) (func() error, error) {
	unlock, err := d.lockRoot(ctx, wait)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.unlock = unlock
	d.mu.Unlock()
	return func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.unlock == nil {
			return nil
		}
		err := d.unlock()
		d.unlock = nil
		return err
	}, nil
}

// lockRoot creates the root and its private directory, takes the lock and
// removes leftovers, all without following a link below the root.
func (d *DirStore) lockRoot(ctx context.Context, wait time.Duration) (func() error, error) {
	if err := atomicfile.MkdirAll(d.root); err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", d.root, err)
	}
	t, err := d.open()
	if err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", d.root, err)
	}
	defer func() { _ = t.Close() }()
	if err := t.MkdirAll(PrivateDirName); err != nil {
		return nil, fmt.Errorf("open mirror tree %s: %w", d.root, err)
	}
	unlock, err := t.Lock(ctx, lockName, wait)
	if err != nil {
		return nil, err
	}
	if err := removeLeftovers(t); err != nil {
		_ = unlock()
		return nil, fmt.Errorf("open mirror tree %s: %w", d.root, err)
	}
	return unlock, nil
}

func (d *DirStore) checkLocked() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unlock == nil {
		return fmt.Errorf("write to %s: %w", d.root, ErrReadOnly)
	}
	return nil
}

// same reports whether a and b are the same file. Neither is followed if
// it is a link: a link to a file is not that file.
func same(a, b string) bool {
	ia, err := os.Lstat(a)
	if err != nil {
		return false
	}
	ib, err := os.Lstat(b)
	return err == nil && os.SameFile(ia, ib)
}

// sameFile reports whether the local file src is rel beneath t, neither
// followed if it is a link.
func sameFile(src string, t *atomicfile.Root, rel string) bool {
	is, err := os.Lstat(src)
	if err != nil {
		return false
	}
	ir, err := t.Lstat(rel)
	return err == nil && os.SameFile(is, ir)
}

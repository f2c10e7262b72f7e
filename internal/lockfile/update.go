package lockfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/mirror"
)

// FileName is where OpenTofu keeps a root module's dependency locks.
const FileName = ".terraform.lock.hcl"

// Update is a lock file computed for one root module, ready to write.
type Update struct {
	Path string
	file *File
	same bool // the file on disk already says exactly this
}

// Providers counts the providers the lock file locks.
func (u Update) Providers() int { return len(u.file.Locks) }

// Unchanged reports whether the file on disk already says exactly this.
func (u Update) Unchanged() bool { return u.same }

// Compute works out a root module's new lock file without writing it:
// the providers it needs (others are dropped, as tofu does), each at the
// version it would install from the mirror, with the hashes of the
// requested platforms; an unchanged version keeps its old hashes too.
func Compute(ctx context.Context, l *mirror.Locker, dir string, needs []mirror.Need, old *File, platforms []addrs.Platform) (Update, error) {
	file := &File{Locks: map[addrs.Provider]*Lock{}}
	var errs []error
	for _, n := range needs {
		entry, err := l.Lock(ctx, n, platforms)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lock, err := newLock(dir, n, entry, old)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		file.Locks[n.Provider] = lock
	}
	if err := errors.Join(errs...); err != nil {
		return Update{}, err
	}
	path := filepath.Join(dir, FileName)
	onDisk, err := os.ReadFile(path)
	return Update{Path: path, file: file, same: err == nil && bytes.Equal(onDisk, file.Bytes())}, nil
}

// newLock is the lock of n's entry: the constraints in their normal form,
// the entry's hashes, and the old lock's too when the version is the same.
func newLock(dir string, n mirror.Need, entry mirror.LockEntry, old *File) (*Lock, error) {
	constraints, err := addrs.NormalizeConstraints(n.Constraints)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", dir, n.Provider, err)
	}
	hashes := entry.Hashes
	if prev, ok := old.lock(n.Provider); ok && prev.Version.Same(entry.Version) {
		// init keeps the old hashes of the schemes it checks, no others
		hashes = append(keptHashes(prev.Hashes), hashes...)
	}
	return &Lock{Provider: n.Provider, Version: entry.Version, Constraints: constraints, Hashes: normalizeHashes(hashes)}, nil
}

// Write writes the lock file, unless it is unchanged.
func (u Update) Write() error {
	if u.same {
		return nil
	}
	return Write(u.Path, u.file)
}

// lock returns the file's lock of p; none for a nil file.
func (f *File) lock(p addrs.Provider) (*Lock, bool) {
	if f == nil {
		return nil, false
	}
	l, ok := f.Locks[p]
	return l, ok
}

package layout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// partialDirName, in a workspace, holds downloads interrupted by a failed
// or killed run, named by the SHA-256 their complete bytes must have, so
// the next run can resume them. Their content is checked against that
// digest when complete.
const partialDirName = "partial"

// partialMaxAge is how long an untouched partial download is kept.
const partialMaxAge = 7 * 24 * time.Hour

// OpenPartial opens the partial download for an archive whose complete
// SHA-256 is digest (hex), creating it if needed, positioned at its end.
// It returns the file and how many bytes it already holds. ok is false
// when another download of the same bytes is using it, in this process
// or another; the caller then stages the download with CreateStaged
// instead. The name is a digest, never a path.
//
// A partial download is used by one process at a time: OpenPartial takes
// the lock of its lock file, partial/DIGEST.lock (atomicfile's
// Root.TryLock), before it opens the download, and holds it until
// ReleasePartial, by which time the caller has staged the download
// (Stage) or removed it. So no other process appends to it, stages it or
// removes it meanwhile, and a process that dies releases it. The lock is
// on a file of its own so that the download can be renamed and removed
// while it is held, on every system.
//
// The file is opened with O_NOFOLLOW: a link, or anything but a regular
// file, at its name (or a link in place of the partial directory) is an
// error naming the path, never written through.
func (t *Workspace) OpenPartial(digest string) (f *os.File, size int64, ok bool, err error) {
	if !fs.ValidPath(digest) || strings.ContainsAny(digest, `/\`) || strings.HasSuffix(digest, lockSuffix) {
		return nil, 0, false, fmt.Errorf("open partial download %q: not a file name", digest)
	}
	t.mu.Lock()
	if _, busy := t.partials[digest]; busy {
		t.mu.Unlock()
		return nil, 0, false, nil
	}
	t.partials[digest] = nil // taken, not yet locked
	t.mu.Unlock()
	f, size, held, err := t.openPartial(digest)
	if err != nil {
		t.ReleasePartial(digest)
		if errors.Is(err, atomicfile.ErrLocked) {
			return nil, 0, false, nil // another process's download
		}
		return nil, 0, false, fmt.Errorf("open partial download %s: %w", digest, err)
	}
	t.mu.Lock()
	t.partials[digest] = held
	t.mu.Unlock()
	return f, size, true, nil
}

// openPartial locks the partial download named digest and opens it
// (creating it if needed), positioned at its end. held holds the lock.
func (t *Workspace) openPartial(digest string) (f *os.File, size int64, held *os.File, err error) {
	if err := t.root.MkdirAll(partialDirName); err != nil {
		return nil, 0, nil, err
	}
	rel := partialDirName + "/" + digest
	held, err = t.root.TryLock(rel + lockSuffix)
	if err != nil {
		return nil, 0, nil, err
	}
	f, err = t.root.OpenFile(rel, os.O_RDWR|os.O_CREATE, atomicfile.FileMode)
	if err == nil {
		if size, err = f.Seek(0, io.SeekEnd); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		_ = held.Close()
		return nil, 0, nil, err
	}
	return f, size, held, nil
}

// ReleasePartial ends this run's use of a partial download (which stays on
// disk for a later run, unless the caller removed or staged it) and
// releases its lock.
func (t *Workspace) ReleasePartial(digest string) {
	t.mu.Lock()
	held := t.partials[digest]
	delete(t.partials, digest)
	t.mu.Unlock()
	if held != nil {
		unlockPartial(t.root, partialDirName+"/"+digest, held)
	}
}

// unlockPartial releases the lock of the partial download rel, held by
// held. Its lock file is removed first, while the lock is held (so no
// one can have locked it meanwhile and see another take a new one), and
// only if the download is gone: a download left for a later run keeps
// its lock file. A system that cannot remove an open file (Windows)
// keeps it too; a lock file without a download is removed by a later
// workspace (removeOldPartials).
func unlockPartial(t *atomicfile.Root, rel string, held *os.File) {
	if _, err := t.Lstat(rel); errors.Is(err, fs.ErrNotExist) {
		_ = t.Remove(rel + lockSuffix)
	}
	_ = held.Close()
}

// removeOldPartials deletes partial downloads nobody touched for a week
// and no live process holds (see OpenPartial), and lock files whose
// download is gone and whose lock is free. A link in place of the
// partial directory is an error; links and other entries in it are
// never followed (a link is removed like a file, by its own age).
func removeOldPartials(t *atomicfile.Root) error {
	entries, err := t.ReadDir(partialDirName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // none yet
	}
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		if download, ok := strings.CutSuffix(name, lockSuffix); ok {
			if !names[download] && e.Type().IsRegular() {
				if err := removeUnheld(t, partialDirName+"/"+download); err != nil {
					return fmt.Errorf("remove the lock file of a finished download: %w", err)
				}
			}
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) <= partialMaxAge {
			continue
		}
		rel := partialDirName + "/" + name
		if !info.Mode().IsRegular() {
			err = t.Remove(rel)
		} else {
			err = removeUnheld(t, rel)
		}
		if err != nil {
			return fmt.Errorf("remove old partial download: %w", err)
		}
	}
	return nil
}

// removeUnheld removes the partial download rel, if any, and its lock
// file, unless a live process holds its lock.
func removeUnheld(t *atomicfile.Root, rel string) error {
	held, err := t.TryLock(rel + lockSuffix)
	if errors.Is(err, atomicfile.ErrLocked) {
		return nil // in use by a live process
	}
	if err != nil {
		return err
	}
	err = t.Remove(rel)
	unlockPartial(t, rel, held)
	return err
}

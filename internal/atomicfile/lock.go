package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/notify"
)

// ErrLocked means another process holds a lock Lock or Root.Lock waited
// for. Its message is the one a user of tfmirror reads when two writers
// of a mirror meet.
var ErrLocked = errors.New("another tfmirror process is writing this mirror")

// lockPollInterval is how often a waiting lock is retried.
const lockPollInterval = 200 * time.Millisecond

// Lock takes an exclusive lock on the existing regular file path, waiting
// up to wait for another process that holds it (0 fails at once), or
// until ctx ends. The lock is held by an open file and released by the
// operating system when the process ends, however it ends, so a killed
// process never leaves it behind; unlock releases it sooner. Two opens of
// the file lock each other out, in one process as in two.
//
// The file is opened for reading only and never written: it may hold
// data of its own (an OCI image layout locks its oci-layout file), so a
// refusal cannot say who holds the lock; Root.Lock, whose file is the
// lock's alone, does. A link, or anything but a regular file, at path is
// refused, never followed. When the lock stays held the error wraps
// ErrLocked; when ctx ends it wraps ctx.Err().
func Lock(ctx context.Context, path string, wait time.Duration) (unlock func() error, err error) {
	f, err := openLocalFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := lockFile(ctx, f, path, wait, nil); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f.Close, nil
}

// Lock takes the exclusive lock of the directory, held on the file rel
// beneath it (created if missing), waiting up to wait for another
// process that holds it (0 fails at once), or until ctx ends. As for
// Lock, the operating system releases it when the process ends, and
// unlock releases it sooner.
//
// The file is the lock's alone: Lock writes into it who holds the lock
// (the process id and since when), and a refusal names that holder.
// The file is opened with O_NOFOLLOW: a link or anything but a regular
// file there is refused, never truncated or written through. Messages
// name the directory, which is what the lock guards.
func (t *Root) Lock(ctx context.Context, rel string, wait time.Duration) (unlock func() error, err error) {
	f, err := t.OpenFile(rel, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", t.dir, err)
	}
	if err := lockFile(ctx, f, t.dir, wait, readHolder); err != nil {
		_ = f.Close()
		return nil, err
	}
	recordHolder(f)
	return f.Close, nil
}

// TryLock takes the exclusive lock of the regular file rel beneath the
// directory, created empty (FileMode) if missing, without waiting and
// without writing to it, and returns the open file that holds it:
// closing it releases the lock, as the end of the process does, however
// it ends. It is how a process marks a file (a lock file of its own, a
// partial download) as in use, and how another learns whether the user
// of such a file is still alive.
//
// The error wraps ErrLocked when another open file holds the lock, and
// also when rel no longer names the file that was locked by the time the
// lock was had: its holder removed or renamed it before letting go, so
// whatever the caller wanted of rel is gone and it should look again. A
// link, or anything but a regular file, at rel is refused, never
// followed.
func (t *Root) TryLock(rel string) (held *os.File, err error) {
	f, err := t.OpenFile(rel, os.O_RDONLY|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", t.Path(rel), err)
	}
	if err := tryLock(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", t.Path(rel), err)
	}
	same, err := t.SameFile(rel, f)
	if err == nil && !same {
		err = fmt.Errorf("lock %s: it was removed or replaced while it was being locked: %w", t.Path(rel), ErrLocked)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// SameFile reports whether rel, beneath t, is the open file f: not a link
// to it, nor a file that took its name since f was opened. A missing rel
// is not an error; it is not f.
func (t *Root) SameFile(rel string, f *os.File) (bool, error) {
	have, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", t.Path(rel), err)
	}
	now, err := t.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(have, now), nil
}

// lockFile takes the lock of the open file f, trying again every
// lockPollInterval until wait has passed or ctx ends. name is what
// messages call the lock; holder, if not nil, reads who holds it.
func lockFile(ctx context.Context, f *os.File, name string, wait time.Duration, holder func(*os.File) string) error {
	deadline := time.Now().Add(wait)
	for told := false; ; told = true {
		err := tryLock(f)
		if err == nil {
			return nil
		}
		if !told && errors.Is(err, ErrLocked) && wait > 0 {
			by := ""
			if holder != nil {
				by = holder(f)
			}
			notify.Wait(ctx, "the lock of "+name, by, wait)
		}
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			if holder == nil {
				return fmt.Errorf("lock %s (waited %s): %w", name, wait, err)
			}
			return fmt.Errorf("lock %s (waited %s; held by %s): %w", name, wait, holder(f), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock %s: %w", name, ctx.Err())
		case <-time.After(lockPollInterval):
		}
	}
}

// recordHolder writes who holds the lock, for the message another process
// shows while it waits.
func recordHolder(f *os.File) {
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d since %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))), 0)
}

// maxHolderBytes bounds what is read of the lock file: a holder line is
// short.
const maxHolderBytes = 256

// holderSettle bounds how long readHolder waits for a holder that has
// just taken the lock to write who it is (recordHolder follows the lock
// at once).
const holderSettle = 100 * time.Millisecond

// readHolder reads who holds the lock from the lock file this process
// opened (and checked), never more than maxHolderBytes. A lock taken a
// moment ago may not name its holder yet: the file is read again for a
// short while before the holder is called unknown.
func readHolder(f *os.File) string {
	buf := make([]byte, maxHolderBytes)
	for deadline := time.Now().Add(holderSettle); ; time.Sleep(5 * time.Millisecond) {
		n, _ := f.ReadAt(buf, 0)
		holder := strings.TrimSpace(string(buf[:n]))
		if strings.HasSuffix(string(buf[:n]), "\n") && holder != "" {
			return holder
		}
		if time.Now().After(deadline) {
			if holder == "" {
				return "an unknown process"
			}
			return holder
		}
	}
}

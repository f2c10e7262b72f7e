package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
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

// lockFile takes the lock of the open file f, trying again every
// lockPollInterval until wait has passed or ctx ends. name is what
// messages call the lock; holder, if not nil, reads who holds it.
func lockFile(ctx context.Context, f *os.File, name string, wait time.Duration, holder func(*os.File) string) error {
	deadline := time.Now().Add(wait)
	for {
		err := tryLock(f)
		if err == nil {
			return nil
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

// readHolder reads who holds the lock from the lock file this process
// opened (and checked), never more than maxHolderBytes.
func readHolder(f *os.File) string {
	buf := make([]byte, maxHolderBytes)
	n, _ := f.ReadAt(buf, 0)
	holder := strings.TrimSpace(string(buf[:n]))
	if holder == "" {
		return "an unknown process"
	}
	return holder
}

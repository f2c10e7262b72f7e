package layout

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// PrivateDirName is the directory under a tree's root that holds what
// tfmirror keeps for itself: the lock and the staging area. Nothing in it
// is part of the mirror; exclude it when uploading (aws s3 sync
// --exclude '.tfmirror/*').
const PrivateDirName = ".tfmirror"

// ErrLocked means another process holds the tree's lock.
var ErrLocked = errors.New("another tfmirror process is writing this mirror")

// lockPollInterval is how often a waiting Open retries the lock.
const lockPollInterval = 200 * time.Millisecond

// lockName is the lock file in the private directory.
const lockName = PrivateDirName + "/lock"

// lockTree takes the tree's exclusive lock, waiting up to wait. The lock is
// held by an open file and released by the operating system when the
// process ends, however it ends, so a killed build never leaves it behind.
// The lock file is opened with O_NOFOLLOW: a link or anything but a
// regular file there is refused, never truncated or written through.
func lockTree(ctx context.Context, t *treeRoot, wait time.Duration) (*os.File, error) {
	f, err := t.openFile(lockName, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", t.dir, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := tryLock(f)
		if err == nil {
			recordHolder(f)
			return f, nil
		}
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			holder := readHolder(f)
			_ = f.Close()
			return nil, fmt.Errorf("lock %s (waited %s; held by %s): %w", t.dir, wait, holder, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", t.dir, ctx.Err())
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

// removeLeftovers deletes what killed runs left behind: the staging area
// and temporary files of interrupted atomic writes. It runs with the lock
// held, so none of it can belong to a live process. Nothing a client can
// see is touched: leftovers were never renamed into place. Only
// tfmirror's own temporary names are removed, and only in the directories
// tfmirror writes (ownDirs); an operator's files, whatever their names,
// and directories tfmirror does not write are left alone. No link is
// followed.
func removeLeftovers(t *treeRoot) error {
	if err := t.r.RemoveAll(filepath.FromSlash(StagingDirName)); err != nil {
		return fmt.Errorf("remove old staging area: %w", t.pathErr("remove", StagingDirName, err))
	}
	dirs, err := ownDirs(t)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := removeTemps(t, dir); err != nil {
			return err
		}
	}
	return nil
}

package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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

// lockTree takes the tree's exclusive lock, waiting up to wait. The lock is
// held by an open file and released by the operating system when the
// process ends, however it ends, so a killed build never leaves it behind.
func lockTree(ctx context.Context, root string, wait time.Duration) (*os.File, error) {
	path := filepath.Join(root, PrivateDirName, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", root, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := tryLock(f)
		if err == nil {
			recordHolder(f)
			return f, nil
		}
		if !errors.Is(err, ErrLocked) || time.Now().After(deadline) {
			holder := readHolder(path)
			_ = f.Close()
			return nil, fmt.Errorf("lock %s (waited %s; held by %s): %w", root, wait, holder, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", root, ctx.Err())
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

func readHolder(path string) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return "an unknown process"
	}
	return strings.TrimSpace(string(data))
}

// removeLeftovers deletes what killed runs left behind: staging areas and
// temporary files of interrupted atomic writes. It runs with the lock held,
// so none of it can belong to a live process. Nothing a client can see is
// touched: leftovers were never renamed into place.
func removeLeftovers(root string) error {
	if err := os.RemoveAll(filepath.Join(root, PrivateDirName, "staging")); err != nil {
		return fmt.Errorf("remove old staging area: %w", err)
	}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == PrivateDirName {
			return filepath.SkipDir
		}
		if !d.IsDir() && isTempName(d.Name()) {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove leftover %s: %w", path, err)
			}
		}
		return nil
	})
}

package layout

import (
	"fmt"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// PrivateDirName is the directory under a tree's root that holds what
// tfmirror keeps for itself: the lock and the staging area. Nothing in it
// is part of the mirror; exclude it when uploading (aws s3 sync
// --exclude '.tfmirror/*').
const PrivateDirName = ".tfmirror"

// ErrLocked means another process holds the tree's lock. It is
// atomicfile.ErrLocked, the error of the local lock, so that every
// store's lock refusal is matched by one errors.Is.
var ErrLocked = atomicfile.ErrLocked

// lockName is the lock file in the private directory.
const lockName = PrivateDirName + "/lock"

// removeLeftovers deletes what killed runs left behind: the shared staging
// and unpack areas of older versions (a workspace's own runs are removed
// by OpenWorkspace, by their locks) and temporary files of interrupted
// atomic writes. It runs with the lock held, so none of it can belong to
// a live process. Nothing a client can
// see is touched: leftovers were never renamed into place. Only
// tfmirror's own temporary names are removed, and only in the directories
// tfmirror writes (ownDirs); an operator's files, whatever their names,
// and directories tfmirror does not write are left alone. No link is
// followed.
func removeLeftovers(t *atomicfile.Root) error {
	for _, old := range []string{StagingDirName, PrivateDirName + "/" + unpackDirName} {
		if err := t.RemoveAll(old); err != nil {
			return fmt.Errorf("remove old staging area: %w", err)
		}
	}
	dirs, err := ownDirs(t)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := t.RemoveTemps(dir); err != nil {
			return err
		}
	}
	return nil
}

// Package atomicfile is tfmirror's safe local filesystem: files replaced
// so that a reader sees the old content or the new, never a mix or a
// partial file, whatever happens to the writing process, and directories
// worked in without ever following a symbolic link tfmirror did not
// create.
//
// It owns:
//   - atomic writes: WriteFile, WriteFileIn and Root.WriteFile (a
//     temporary file in the target's directory, fsync, world-readable
//     FileMode, rename, fsync of the directory), Root.Place for a local
//     file (moved, hard-linked or copied the same way), and the pieces
//     callers that stage their own files use: SyncClose, Rename, SyncDir,
//     MkdirAll (DirMode whatever the umask) and RenameExchange, which
//     swaps two directories in one step where Linux can;
//   - Writeback, which starts writing a large file being downloaded to
//     disk as it grows, so that the fsync publishing it waits for the last
//     few megabytes only (sync_file_range on Linux, nothing elsewhere);
//   - Root, a directory read and written beneath without following a
//     link: os.Root, O_NOFOLLOW opens, every directory on a path checked,
//     and anything but a regular file (a link, a device, a named pipe)
//     refused with an error wrapping ErrNotRegular before a byte is read;
//     TypeName describes what was found instead;
//   - the names of its temporary files (TempPrefix) and the removal of
//     those an interrupted write left behind (Root.RemoveTemps);
//   - the one lock between processes on a local file: Lock, on a file
//     with content of its own, and Root.Lock, on a lock file of its own
//     that names its holder; both wait with a context and a time limit,
//     refuse with ErrLocked, and are released by the system when the
//     process dies. Root.TryLock takes it without waiting on a file a
//     process marks as its own (a lock file, a partial download), so
//     that another learns whether that process is alive from the lock
//     itself, never from ages or process ids.
//
// It does not know what a mirror is: which files a tree holds, which of
// its directories are tfmirror's and may be searched for leftovers
// (package layout names them to RemoveTemps), or in which order files
// must appear (the publish order is layout's). Locks within one process
// are package syncx's. It imports only the standard library and
// golang.org/x/sys (which is why Lock waits with a loop of its own
// rather than syncx.Sleep).
package atomicfile

package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks Linux to begin writing the range to disk without
// waiting for it (sync_file_range with SYNC_FILE_RANGE_WRITE). An error
// only means the file is flushed later, by SyncClose.
func startWriteback(f *os.File, off, n int64) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := conn.Control(func(fd uintptr) {
		err = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); cerr != nil {
		return cerr
	}
	return err
}

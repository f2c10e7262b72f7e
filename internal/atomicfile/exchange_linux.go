//go:build linux

package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// RenameExchange atomically swaps the directory entries from and to with
// renameat2(RENAME_EXCHANGE). Filesystems without it fail with EINVAL,
// kernels before 3.15 with ENOSYS (see IsExchangeUnsupported).
func RenameExchange(from, to string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "renameat2 RENAME_EXCHANGE", Old: from, New: to, Err: err}
	}
	return nil
}

//go:build linux

package layout

import (
	"os"

	"golang.org/x/sys/unix"
)

// oNoFollow makes opening a symbolic link fail.
const oNoFollow = unix.O_NOFOLLOW

// renameExchange atomically swaps the directory entries from and to with
// renameat2(RENAME_EXCHANGE). Filesystems without it fail with EINVAL,
// kernels before 3.15 with ENOSYS.
func renameExchange(from, to string) error {
	if err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_EXCHANGE); err != nil {
		return &os.LinkError{Op: "renameat2 RENAME_EXCHANGE", Old: from, New: to, Err: err}
	}
	return nil
}

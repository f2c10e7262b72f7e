//go:build linux

package layout

import "golang.org/x/sys/unix"

// oNoFollow makes opening a symbolic link fail.
const oNoFollow = unix.O_NOFOLLOW

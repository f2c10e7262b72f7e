//go:build unix

package hashing

import "syscall"

// openFlags open a file without following a final link and without
// waiting for the other end of a named pipe, should one be swapped in
// between the check of the path and the open: what was opened is checked
// after.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

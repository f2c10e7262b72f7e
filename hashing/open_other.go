//go:build !unix

package hashing

// openFlags are plain where the system has no O_NOFOLLOW or O_NONBLOCK;
// what was opened is still checked after.
const openFlags = 0

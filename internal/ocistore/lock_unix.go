//go:build !windows

package ocistore

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path (which must exist), waiting for
// other processes that hold it.
func lockFile(path string) (func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil // closing releases the lock
}

//go:build windows

package ocistore

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock on path (which must exist), waiting for
// other processes that hold it.
func lockFile(path string) (func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { _ = f.Close() }, nil
}

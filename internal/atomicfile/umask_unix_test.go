//go:build unix

package atomicfile

import (
	"syscall"
	"testing"
)

// unixModes reports whether files have Unix permission bits to check.
const unixModes = true

// setUmask sets the process umask for the rest of the test and restores it
// afterwards. The umask is process-wide, so tests using it must not run in
// parallel with others.
func setUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

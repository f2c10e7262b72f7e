//go:build !unix

package atomicfile

import "testing"

// unixModes reports whether files have Unix permission bits to check.
const unixModes = false

// setUmask does nothing: there is no umask on this system.
func setUmask(t *testing.T, _ int) { t.Helper() }

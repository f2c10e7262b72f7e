//go:build amd64 && !purego

package inflate

import (
	"testing"
	"unsafe"
)

// TestFastStateLayout holds the offsets fast_amd64.s uses.
func TestFastStateLayout(t *testing.T) {
	var s fastState
	var tb tables
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"in", unsafe.Offsetof(s.in), 0},
		{"inLimit", unsafe.Offsetof(s.inLimit), 8},
		{"out", unsafe.Offsetof(s.out), 16},
		{"outLimit", unsafe.Offsetof(s.outLimit), 24},
		{"tables", unsafe.Offsetof(s.tables), 32},
		{"bits", unsafe.Offsetof(s.bits), 40},
		{"nb", unsafe.Offsetof(s.nb), 48},
		{"ip", unsafe.Offsetof(s.ip), 56},
		{"op", unsafe.Offsetof(s.op), 64},
		{"tables.dist (DIST)", unsafe.Offsetof(tb.dist), 9368},
		{"len(tables.lit) (LIT_SIZE)", unsafe.Sizeof(tb.lit) / 4, 2342},
		{"len(tables.dist) (DIST_SIZE)", unsafe.Sizeof(tb.dist) / 4, 402},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d in Go, %d in fast_amd64.s", c.name, c.got, c.want)
		}
	}
	if litTableBits != 11 || distTableBits != 8 {
		t.Errorf("fast_amd64.s masks with 2047 and 255: table bits %d and %d", litTableBits, distTableBits)
	}
}

package inflate

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestBuildFindsEveryCode looks up every code of random complete codes,
// as the decoder does, in tables filled with garbage beforehand: each
// must lead to its symbol's entry, at every index its bits allow.
func TestBuildFindsEveryCode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	plan := make([]byte, 4096)
	for round := range 2000 {
		table, tableBits, parts := make([]uint32, litTableSize), uint32(litTableBits), litParts[:]
		n := maxNumLit
		if round%2 == 1 {
			table, tableBits, parts, n = make([]uint32, distTableSize), distTableBits, distParts[:], maxNumDist
		}
		for i := range table {
			table[i] = 0xdeadbeef
		}
		for i := range plan {
			plan[i] = byte(rng.Uint32())
		}
		lens := randomLengths(&planReader{plan}, n, 2+rng.IntN(n-1), maxCodeLen)
		if !build(table, lens, tableBits, parts) {
			t.Fatalf("round %d: build refused the complete code %v", round, lens)
		}
		codes := canonical(lens)
		for sym, n := range lens {
			if n == 0 {
				continue
			}
			l := uint32(n)
			rev := int(bits.Reverse16(uint16(codes[sym])) >> (16 - l))
			if l <= tableBits {
				for i := rev; i < 1<<tableBits; i += 1 << l {
					if table[i] != withLength(parts[sym], l) {
						t.Fatalf("round %d: symbol %d (code of %d bits): entry %d is %#x, want %#x", round, sym, l, i, table[i], withLength(parts[sym], l))
					}
				}
				continue
			}
			link := table[rev&(1<<tableBits-1)]
			if link&flagLink == 0 || link&0xff != tableBits {
				t.Fatalf("round %d: symbol %d (code of %d bits): main entry %#x is not a link", round, sym, l, link)
			}
			start, subBits := int(link>>16), (link>>8)&15
			for i := rev >> tableBits; i < 1<<subBits; i += 1 << (l - tableBits) {
				if e := table[start+i]; e != withLength(parts[sym], l-tableBits) {
					t.Fatalf("round %d: symbol %d (code of %d bits): subtable entry %d is %#x, want %#x", round, sym, l, i, e, withLength(parts[sym], l-tableBits))
				}
			}
		}
	}
}

// TestBuildIncompleteCodes: compress/flate accepts an empty code and a
// single code of one bit; every other entry of their tables finds no
// code, whatever the table held before.
func TestBuildIncompleteCodes(t *testing.T) {
	garbage := func() []uint32 {
		table := make([]uint32, litTableSize)
		for i := range table {
			table[i] = 0xdeadbeef
		}
		return table
	}
	table := garbage()
	if !build(table, make([]uint8, maxNumLit), litTableBits, litParts[:]) {
		t.Fatal("an empty code is refused")
	}
	for i, e := range table[:1<<litTableBits] {
		if e != flagInvalid {
			t.Fatalf("empty code: entry %d is %#x, want no code", i, e)
		}
	}
	lens := make([]uint8, maxNumLit)
	lens[5] = 1
	table = garbage()
	if !build(table, lens, litTableBits, litParts[:]) {
		t.Fatal("a single code of one bit is refused")
	}
	for i, e := range table[:1<<litTableBits] {
		want := uint32(flagInvalid)
		if i%2 == 0 {
			want = withLength(litParts[5], 1)
		}
		if e != want {
			t.Fatalf("single code: entry %d is %#x, want %#x", i, e, want)
		}
	}
	for _, lens := range [][]uint8{{2, 2}, {1, 1, 1}, {2}, {1, 2, 3}} {
		if build(garbage(), lens, litTableBits, litParts[:]) {
			t.Errorf("code lengths %v are accepted", lens)
		}
	}
}

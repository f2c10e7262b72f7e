package inflate

import "math/bits"

// A table entry decodes one Huffman code: indexed by the next bits of the
// stream (the low tableBits of them for a main table), it says how many
// bits to consume and what they meant. Codes longer than a main table's
// bits go through a subtable the main entry links to.
//
//	bits 0-7    bits to consume: the code's length plus its extra bits
//	            (for a link: the main table's bits)
//	bits 8-11   the code's length, where its extra bits start
//	            (for a link: the subtable's bits)
//	bit 12      a literal
//	bit 13      the end of the block
//	bit 14      a link to a subtable
//	bit 15      no code: the stream is corrupt
//	bits 16-31  the literal, the base of a length or distance, the
//	            code-length symbol, or where the subtable starts
const (
	flagLiteral     = 1 << 12
	flagEnd         = 1 << 13
	flagLink        = 1 << 14
	flagInvalid     = 1 << 15
	flagExceptional = flagEnd | flagLink | flagInvalid

	litTableBits  = 11
	distTableBits = 8
	preTableBits  = 7

	// The most entries a main table and its subtables take (zlib's
	// "enough" for these symbol counts, table bits and 15-bit codes).
	litTableSize  = 2342
	distTableSize = 402
	preTableSize  = 1 << preTableBits

	maxCodeLen = 15
	numLit     = 288 // fixed Huffman codes; a dynamic block has at most 286
	numDist    = 32  // fixed; a dynamic block has at most 30
	maxNumLit  = 286
	maxNumDist = 30
	endOfBlock = 256
)

// entryFunc makes the entry of symbol sym whose code (or, in a subtable,
// the rest of it) is n bits long.
type entryFunc func(sym int, n uint32) uint32

func litEntry(sym int, n uint32) uint32 {
	switch {
	case sym < endOfBlock:
		return uint32(sym)<<16 | flagLiteral | n<<8 | n
	case sym == endOfBlock:
		return flagEnd | n<<8 | n
	case sym < 265:
		return uint32(sym-254)<<16 | n<<8 | n
	case sym < 285:
		extra := uint32(sym-261) / 4
		base := (uint32(sym-265)%4+4)<<extra + 3
		return base<<16 | n<<8 | (n + extra)
	case sym == 285:
		return 258<<16 | n<<8 | n
	default: // 286 and 287, in the fixed code only
		return flagInvalid | n<<8 | n
	}
}

func distEntry(sym int, n uint32) uint32 {
	switch {
	case sym < 4:
		return uint32(sym+1)<<16 | n<<8 | n
	case sym < maxNumDist:
		extra := uint32(sym-2) / 2
		base := uint32(1)<<(extra+1) + 1 + uint32(sym&1)<<extra
		return base<<16 | n<<8 | (n + extra)
	default: // 30 and 31, in the fixed code only
		return flagInvalid | n<<8 | n
	}
}

func preEntry(sym int, n uint32) uint32 {
	return uint32(sym)<<16 | n<<8 | n
}

// build fills table with the canonical Huffman code of the code lengths
// lens (0: no code) and says whether compress/flate accepts them: the code
// must be complete, or a single code of one bit, or empty (every lookup
// then finds no code, as compress/flate fails once such a code is used).
func build(table []uint32, lens []uint8, tableBits uint32, entry entryFunc) bool {
	var count [maxCodeLen + 1]int
	for _, n := range lens {
		count[n]++
	}
	count[0] = 0
	maxLen := uint32(maxCodeLen)
	for maxLen > 0 && count[maxLen] == 0 {
		maxLen--
	}
	mainSize := 1 << tableBits
	var next [maxCodeLen + 1]int
	code := 0
	for n := uint32(1); n <= maxLen; n++ {
		code <<= 1
		next[n] = code
		code += count[n]
	}
	complete := code == 1<<maxLen
	if maxLen == 0 || !complete {
		if maxLen != 0 && (code != 1 || maxLen != 1) {
			return false
		}
		for i := range table[:mainSize] {
			table[i] = flagInvalid
		}
		if maxLen == 0 {
			return true
		}
	}

	// Symbols in the order of their codes: by length, then by value.
	var offset [maxCodeLen + 2]int
	for n := 1; n <= maxCodeLen; n++ {
		offset[n+1] = offset[n] + count[n]
	}
	var sorted [numLit]uint16
	for sym, n := range lens {
		if n != 0 {
			sorted[offset[n]] = uint16(sym)
			offset[n]++
		}
	}
	left := count // codes of each length not placed yet
	mask := mainSize - 1
	prefix, subStart, subBits := -1, 0, uint32(0)
	end := mainSize
	for _, sym := range sorted[:offset[maxCodeLen]] {
		n := uint32(lens[sym])
		rev := int(bits.Reverse16(uint16(next[n])) >> (16 - n))
		next[n]++
		if n <= tableBits {
			e := entry(int(sym), n)
			for i := rev; i < mainSize; i += 1 << n {
				table[i] = e
			}
			left[n]--
			continue
		}
		if rev&mask != prefix {
			prefix = rev & mask
			subBits = subtableBits(left[:], n, tableBits, maxLen)
			subStart = end
			end += 1 << subBits
			if end > len(table) {
				return false // cannot happen for a complete code
			}
			table[prefix] = uint32(subStart)<<16 | flagLink | subBits<<8 | tableBits
		}
		e := entry(int(sym), n-tableBits)
		for i := rev >> tableBits; i < 1<<subBits; i += 1 << (n - tableBits) {
			table[subStart+i] = e
		}
		left[n]--
	}
	return true
}

// subtableBits is how many bits the subtable starting with a code of n
// bits needs to hold every code that shares its first tableBits bits,
// from the codes of each length not placed yet (zlib's inflate_table).
func subtableBits(left []int, n, tableBits, maxLen uint32) uint32 {
	sub := n - tableBits
	room := 1 << sub
	for sub+tableBits < maxLen {
		room -= left[sub+tableBits]
		if room <= 0 {
			break
		}
		sub++
		room <<= 1
	}
	return sub
}

// tables are a block's decoding tables, side by side so that the fast
// loop holds one pointer for both.
type tables struct {
	lit  [litTableSize]uint32
	dist [distTableSize]uint32
}

// fixed holds the fixed Huffman codes (RFC 1951, 3.2.6), built once.
var fixed tables

func init() {
	var lens [numLit]uint8
	for i := range lens {
		switch {
		case i < 144:
			lens[i] = 8
		case i < 256:
			lens[i] = 9
		case i < 280:
			lens[i] = 7
		default:
			lens[i] = 8
		}
	}
	build(fixed.lit[:], lens[:], litTableBits, litEntry)
	for i := range numDist {
		lens[i] = 5
	}
	build(fixed.dist[:], lens[:numDist], distTableBits, distEntry)
}

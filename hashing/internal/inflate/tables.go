package inflate

import (
	"math/bits"
	"slices"
)

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

// A symbol's entry is the same for every code but the code's length n
// (bits 0-11): it is the symbol's part plus n in bits 0-7 and 8-11. The
// symbol's parts are computed once, in these arrays.
var (
	litParts  [numLit]uint32
	distParts [numDist]uint32
	preParts  [19]uint32
)

// withLength is a symbol's entry for a code (or the rest of one, in a
// subtable) of n bits.
func withLength(part, n uint32) uint32 { return part + n<<8 + n }

// litPart is a literal/length symbol's part of its entries: the literal
// or the length's base, and its extra bits (counted in bits 0-7 with the
// code's own).
func litPart(sym int) uint32 {
	switch {
	case sym < endOfBlock:
		return uint32(sym)<<16 | flagLiteral
	case sym == endOfBlock:
		return flagEnd
	case sym < 265:
		return uint32(sym-254) << 16
	case sym < 285:
		extra := uint32(sym-261) / 4
		base := (uint32(sym-265)%4+4)<<extra + 3
		return base<<16 | extra
	case sym == 285:
		return 258 << 16
	default: // 286 and 287, in the fixed code only
		return flagInvalid
	}
}

// distPart is a distance symbol's part of its entries.
func distPart(sym int) uint32 {
	switch {
	case sym < 4:
		return uint32(sym+1) << 16
	case sym < maxNumDist:
		extra := uint32(sym-2) / 2
		base := uint32(1)<<(extra+1) + 1 + uint32(sym&1)<<extra
		return base<<16 | extra
	default: // 30 and 31, in the fixed code only
		return flagInvalid
	}
}

// build fills table with the canonical Huffman code of the code lengths
// lens (0: no code), whose symbols' parts of their entries are parts, and
// says whether compress/flate accepts them: the code must be complete, or
// a single code of one bit, or empty (every lookup then finds no code, as
// compress/flate fails once such a code is used).
//
// The main table is filled as libdeflate fills it, shortest codes first:
// a code of n bits goes to one entry among the first 1<<n, at its bits
// reversed, and once every code of n bits is placed those first 1<<n
// entries are copied after themselves, so that each code is found at
// every index whose low n bits are its own. That is one copy of the
// table per length instead of a strided store per entry.
func build(table []uint32, lens []uint8, tableBits uint32, parts []uint32) bool {
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
	code := 0
	for n := uint32(1); n <= maxLen; n++ {
		code = code<<1 + count[n]
	}
	if maxLen == 0 || code != 1<<maxLen {
		return buildIncomplete(table[:mainSize], lens, maxLen, code, parts)
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
	syms := sorted[:offset[maxCodeLen]]

	code, size := 0, 1
	for n := uint32(1); n <= tableBits; n++ {
		copy(table[size:2*size], table[:size])
		size *= 2
		for _, sym := range syms[:count[n]] {
			table[bits.Reverse16(uint16(code))>>(16-n)] = withLength(parts[sym], n)
			code++
		}
		syms = syms[count[n]:]
		code <<= 1
	}
	if maxLen <= tableBits {
		return true
	}
	return buildSubtables(table, syms, lens, count, code, tableBits, maxLen, parts)
}

// buildIncomplete fills a main table for an incomplete code: no entry
// finds a code, but for a single code of one bit (maxLen 1, code 1),
// which the entries whose lowest bit is 0 find. It says whether
// compress/flate accepts such a code.
func buildIncomplete(table []uint32, lens []uint8, maxLen uint32, code int, parts []uint32) bool {
	if maxLen != 0 && (maxLen != 1 || code != 1) {
		return false
	}
	for i := range table {
		table[i] = flagInvalid
	}
	if maxLen == 0 {
		return true
	}
	sym := slices.Index(lens, 1)
	for i := 0; i < len(table); i += 2 {
		table[i] = withLength(parts[sym], 1)
	}
	return true
}

// buildSubtables places syms, the symbols whose codes are longer than the
// main table's bits, in the order of their codes, in subtables after the
// main table, each linked from the main entry of its codes' first
// tableBits bits. code is the first code of tableBits+1 bits after the
// main table's; count, the codes of each length.
func buildSubtables(table []uint32, syms []uint16, lens []uint8, count [maxCodeLen + 1]int, code int, tableBits, maxLen uint32, parts []uint32) bool {
	left := count // codes of each length not placed yet
	mask := 1<<tableBits - 1
	prefix, subStart, subBits := -1, 0, uint32(0)
	end := 1 << tableBits
	n := tableBits + 1
	for _, sym := range syms {
		for m := uint32(lens[sym]); n < m; n++ {
			code <<= 1
		}
		rev := int(bits.Reverse16(uint16(code)) >> (16 - n))
		code++
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
		e := withLength(parts[sym], n-tableBits)
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
	for sym := range litParts {
		litParts[sym] = litPart(sym)
	}
	for sym := range distParts {
		distParts[sym] = distPart(sym)
	}
	for sym := range preParts {
		preParts[sym] = uint32(sym) << 16
	}
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
	build(fixed.lit[:], lens[:], litTableBits, litParts[:])
	for i := range numDist {
		lens[i] = 5
	}
	build(fixed.dist[:], lens[:numDist], distTableBits, distParts[:])
}

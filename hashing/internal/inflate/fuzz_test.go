package inflate

import (
	"bytes"
	"compress/flate"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// FuzzInflate holds the Decoder to compress/flate on any bytes, read
// through buffers of any size from 16 bytes.
func FuzzInflate(f *testing.F) {
	for _, level := range []int{flate.NoCompression, flate.BestSpeed, flate.DefaultCompression, flate.HuffmanOnly} {
		stream := compress(f, testData(3000, uint64(level+2)), level)
		f.Add(stream, uint16(0))
		f.Add(stream[:len(stream)/2], uint16(100))
	}
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{0x03, 0x00}, uint16(0))                   // an empty fixed block
	f.Add([]byte{0x01, 0x00, 0x00, 0xff, 0xff}, uint16(0)) // an empty stored block
	f.Add([]byte{0x01, 0x00, 0x00, 0xff, 0xfe}, uint16(0)) // LEN and NLEN disagree
	f.Add([]byte{0x07}, uint16(0))                         // block type 3
	f.Add([]byte("2A0"), uint16(0))                        // ends inside a length's extra bits
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		same(t, data, 16+int(size), false)
		same(t, data, 16+int(size), true)
	})
}

// FuzzInflateCompressed deflates content with compress/flate, changes
// some of its bytes and cuts it anywhere, and holds the Decoder to
// compress/flate on the result.
func FuzzInflateCompressed(f *testing.F) {
	f.Add([]byte("provider resource schema provider resource schema"), uint8(6), uint16(0), []byte{})
	f.Add(testData(20000, 3), uint8(1), uint16(5000), []byte{0, 9, 0xff})
	f.Add(testData(70000, 4), uint8(0), uint16(0), []byte{})
	f.Add(testData(5000, 5), uint8(10), uint16(77), []byte{0, 3, 0x55, 1, 2, 0})
	f.Fuzz(func(t *testing.T, content []byte, level uint8, cut uint16, mutations []byte) {
		if len(content) > 1<<20 {
			return
		}
		stream := compress(t, content, int(level%11)-1)
		for i := 0; i+2 < len(mutations) && len(stream) > 0; i += 3 {
			stream[(int(mutations[i])<<8|int(mutations[i+1]))%len(stream)] ^= mutations[i+2]
		}
		if c := int(cut); c > 0 && c < len(stream) {
			stream = stream[:len(stream)-c]
		}
		same(t, stream, 64<<10, false)
		same(t, stream, 16+int(cut)%1000, true)
	})
}

// FuzzInflateStructured builds a DEFLATE stream block by block from plan
// (see structured): stored blocks, empty ones, fixed and dynamic Huffman
// blocks with codes complete or not, lengths and distances of any symbol,
// reaching before the start of the output or not, the reserved block
// type, streams that end early; and holds the Decoder to compress/flate
// on it.
func FuzzInflateStructured(f *testing.F) {
	f.Add([]byte{0x00, 5, 'h', 'e', 'l', 'l', 'o', 0x01})        // a stored block, then an empty one
	f.Add([]byte{0x02, 9, 1, 2, 3, 200, 30, 7, 250, 3, 0x03})    // fixed Huffman
	f.Add([]byte{0x04, 12, 40, 9, 3, 4, 1, 250, 90, 8, 0x05, 7}) // dynamic Huffman
	f.Add([]byte{0x04, 12, 40, 9, 3, 4, 1, 250, 90, 8, 0x85, 7}) // an incomplete code
	f.Add([]byte{0x02, 3, 255, 255, 255, 255, 0x07})             // a distance before the start
	f.Add([]byte{0x06})                                          // block type 3
	f.Add([]byte{0x42, 40, 1, 2, 3, 4, 5, 6, 7})                 // no end of block: cut short
	f.Fuzz(func(t *testing.T, plan []byte) {
		if len(plan) > 4096 {
			return
		}
		stream := structured(plan)
		same(t, stream, 64<<10, false)
		same(t, stream, 16+len(plan)%100, false)
		same(t, stream, 16, true)
	})
}

// planReader hands out the plan's bytes, then zeros.
type planReader struct{ p []byte }

func (r *planReader) byte() byte {
	if len(r.p) == 0 {
		return 0
	}
	b := r.p[0]
	r.p = r.p[1:]
	return b
}

func (r *planReader) empty() bool { return len(r.p) == 0 }

// bitWriter writes a DEFLATE stream's bits, least significant first.
type bitWriter struct {
	out  []byte
	bits uint64
	n    uint
}

func (w *bitWriter) write(v uint32, n uint) {
	w.bits |= uint64(v&(1<<n-1)) << w.n
	w.n += n
	for w.n >= 8 {
		w.out = append(w.out, byte(w.bits))
		w.bits >>= 8
		w.n -= 8
	}
}

// code writes a Huffman code, most significant bit first.
func (w *bitWriter) code(c uint16, n uint8) {
	w.write(uint32(bits.Reverse16(c)>>(16-n)), uint(n))
}

func (w *bitWriter) align() {
	if w.n > 0 {
		w.write(0, 8-w.n)
	}
}

func (w *bitWriter) bytes() []byte {
	w.align()
	return w.out
}

// canonical returns the canonical codes of lens.
func canonical(lens []uint8) []uint16 {
	var count, next [17]uint16
	for _, n := range lens {
		count[n]++
	}
	count[0] = 0
	code := uint16(0)
	for n := 1; n <= 16; n++ {
		code = (code + count[n-1]) << 1
		next[n] = code
	}
	codes := make([]uint16, len(lens))
	for i, n := range lens {
		if n != 0 {
			codes[i] = next[n]
			next[n]++
		}
	}
	return codes
}

// randomLengths gives m of the n symbols (those pick chooses) the depths
// of a random full binary tree no deeper than maxLen: a complete code.
func randomLengths(r *planReader, n, m int, maxLen uint8) []uint8 {
	depths := []uint8{0}
	for len(depths) < m {
		i := int(r.byte()) % len(depths)
		if depths[i] >= maxLen {
			i = 0
			for i < len(depths) && depths[i] >= maxLen {
				i++
			}
			if i == len(depths) {
				break
			}
		}
		depths[i]++
		depths = append(depths, depths[i])
	}
	lens := make([]uint8, n)
	if len(depths) == 1 {
		depths[0] = 1 // a single code of one bit
	}
	for _, d := range depths {
		s := int(r.byte()) % n
		for lens[s] != 0 {
			s = (s + 1) % n
		}
		lens[s] = d
	}
	return lens
}

// structured builds a stream from plan: for each block, a byte says
// final (bit 0) and type (bits 1-2), then per type:
//   - stored: a length byte, the bytes (LEN's complement is wrong when the
//     header byte's bit 7 is set);
//   - fixed: a count of symbols, each a byte (a literal below 0xe0, else a
//     length and a distance from the next bytes, any symbol), then the end
//     of block unless the header byte's bit 6 is set;
//   - dynamic: the number of lengths and distances (up to 288 and 32, more
//     than allowed included), complete codes from random trees (one length
//     changed when the header byte's bit 7 is set), then symbols as for
//     fixed.
func structured(plan []byte) []byte {
	r := &planReader{p: plan}
	w := &bitWriter{}
	for block := 0; !r.empty() && block < 16; block++ {
		h := r.byte()
		final := h&1 != 0 || r.empty()
		w.write(uint32(h&1), 1)
		w.write(uint32(h>>1&3), 2)
		switch h >> 1 & 3 {
		case 0:
			w.align()
			n := uint32(r.byte())
			nn := ^n
			if h&0x80 != 0 {
				nn ^= 1
			}
			w.write(n, 16)
			w.write(nn, 16)
			for range n {
				w.write(uint32(r.byte()), 8)
			}
		case 1:
			var lit [288]uint8
			for i := range lit {
				switch {
				case i < 144:
					lit[i] = 8
				case i < 256:
					lit[i] = 9
				case i < 280:
					lit[i] = 7
				default:
					lit[i] = 8
				}
			}
			dist := bytes.Repeat([]byte{5}, 32)
			symbols(r, w, h, lit[:], dist)
		case 2:
			nlit := 257 + int(r.byte())%32
			ndist := 1 + int(r.byte())%32
			lens := append(randomLengths(r, nlit, 2+int(r.byte())%(nlit-1), 15),
				randomLengths(r, ndist, 1+int(r.byte())%ndist, 15)...)
			if h&0x80 != 0 {
				i := int(r.byte()) % len(lens)
				lens[i] = (lens[i] + 1 + r.byte()%3) % 16
			}
			writeLengths(r, w, lens, nlit, ndist)
			symbols(r, w, h, lens[:nlit], lens[nlit:])
		}
		if final {
			break
		}
	}
	return w.bytes()
}

// writeLengths writes a dynamic block's header for the code lengths lens.
func writeLengths(r *planReader, w *bitWriter, lens []uint8, nlit, ndist int) {
	pre := randomLengths(r, 19, 2+int(r.byte())%18, 7)
	// Lengths the code-length code has no code for become one it has.
	var have []uint8
	for s := range 16 {
		if pre[s] != 0 {
			have = append(have, uint8(s))
		}
	}
	if len(have) == 0 {
		pre[0], pre[18] = 1, 1
		have = []uint8{0}
	}
	for i, n := range lens {
		if pre[n] == 0 {
			lens[i] = have[int(n)%len(have)]
		}
	}
	codes := canonical(pre)
	w.write(uint32(nlit-257), 5)
	w.write(uint32(ndist-1), 5)
	w.write(19-4, 4)
	for _, s := range codeOrder {
		w.write(uint32(pre[s]), 3)
	}
	for i := 0; i < len(lens); i++ {
		n := lens[i]
		// A run of zeros as code 17 or 18, when the code has them.
		run := 1
		for i+run < len(lens) && lens[i+run] == n && run < 138 {
			run++
		}
		switch {
		case n == 0 && run >= 11 && pre[18] != 0:
			w.code(codes[18], pre[18])
			w.write(uint32(run-11), 7)
			i += run - 1
		case n == 0 && run >= 3 && pre[17] != 0:
			run = min(run, 10)
			w.code(codes[17], pre[17])
			w.write(uint32(run-3), 3)
			i += run - 1
		case i > 0 && lens[i-1] == n && run >= 3 && pre[16] != 0:
			run = min(run, 6)
			w.code(codes[16], pre[16])
			w.write(uint32(run-3), 2)
			i += run - 1
		default:
			w.code(codes[n], pre[n])
		}
	}
}

// symbols writes a Huffman block's symbols with the codes of lit and dist.
func symbols(r *planReader, w *bitWriter, h byte, lit, dist []uint8) {
	litCodes, distCodes := canonical(lit), canonical(dist)
	pick := func(lens []uint8, b byte) int {
		s := int(b) % len(lens)
		for range lens {
			if lens[s] != 0 {
				return s
			}
			s = (s + 1) % len(lens)
		}
		return -1
	}
	n := int(r.byte())
	for range n {
		b := r.byte()
		if b < 0xe0 {
			if s := pick(lit[:256], b); s >= 0 {
				w.code(litCodes[s], lit[s])
			}
			continue
		}
		s := 257 + int(r.byte())%(len(lit)-257+1)
		if s >= len(lit) {
			s = len(lit) - 1
		}
		if lit[s] == 0 {
			continue
		}
		w.code(litCodes[s], lit[s])
		if s >= 265 && s < 285 {
			w.write(uint32(r.byte()), uint(s-261)/4)
		}
		d := pick(dist, r.byte())
		if d < 0 {
			continue
		}
		w.code(distCodes[d], dist[d])
		if d >= 4 {
			w.write(uint32(r.byte())|uint32(r.byte())<<8, uint(d-2)/2)
		}
	}
	if h&0x40 == 0 && lit[endOfBlock] != 0 {
		w.code(litCodes[endOfBlock], lit[endOfBlock])
	}
}

// TestStructuredStreams runs what FuzzInflateStructured checks on streams
// from a thousand random plans (about one in six valid), read through
// buffers small enough that most symbols are decoded one by one, and
// large.
func TestStructuredStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1951))
	for range 1000 {
		plan := make([]byte, rng.IntN(400))
		for i := range plan {
			plan[i] = byte(rng.Uint32())
		}
		stream := structured(plan)
		same(t, stream, 16+rng.IntN(64), false)
		same(t, stream, 64<<10, false)
		same(t, stream, 16, true)
	}
}

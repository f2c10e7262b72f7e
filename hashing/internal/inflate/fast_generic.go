package inflate

import "encoding/binary"

// forceGeneric makes fast use fastGeneric where it has a faster loop: the
// tests hold both to compress/flate.
var forceGeneric = false

// fastGeneric decodes symbols while at least inMargin bytes of input and
// outMargin bytes of output are left, which is all of a stream but its
// last bytes. It says whether the block ended.
//
// As libdeflate's loop does, it looks up the next symbol's entry before
// refilling the bit buffer, so that the refill and the match copy are
// not on the path from one lookup to the next: the buffer always holds
// the bits a lookup needs. A refill reads eight bytes and leaves 56 bits
// or more; one at the top of each round is enough for three literals of
// the main table (11 bits at most each), or two and a length (20 bits);
// a second one before the distance (28 bits at most), when fewer than
// 39 bits are left, leaves enough for the distance and the next lookup.
//
// Every shift count is masked with 63: no entry's count reaches it, and
// the mask spares the checks Go adds for larger ones.
func (d *Decoder) fastGeneric() (bool, error) {
	in, out := d.in, (*[outSize]byte)(d.out)
	t := d.tables
	bits, nb, ip, op := d.bits, d.nb, d.ip, d.op
	inLimit := len(in) - inMargin
	const outLimit = outSize - outMargin
	done := false
	var err error

	bits, ip, nb = refill(in, ip, bits, nb)
	e := t.lit[bits&(1<<litTableBits-1)]
loop:
	for ip <= inLimit && op <= outLimit {
		bits, ip, nb = refill(in, ip, bits, nb)

		saved := bits
		bits >>= e & 63
		nb -= uint(e & 63)
		// Up to three literals, then the lookup for the next round.
		for lits := 1; e&flagLiteral != 0; lits++ {
			v := byte(e >> 16)
			e = t.lit[bits&(1<<litTableBits-1)]
			out[op] = v
			op++
			if lits == 3 {
				continue loop
			}
			saved = bits
			bits >>= e & 63
			nb -= uint(e & 63)
		}
		if e&flagExceptional != 0 {
			if e&flagLink != 0 {
				// The main table's bits are consumed: the rest of the
				// code is in the subtable.
				e = t.lit[uint(e>>16)+uint(bits&(1<<((e>>8)&15)-1))]
				saved = bits
				bits >>= e & 63
				nb -= uint(e & 63)
				if e&flagLiteral != 0 {
					v := byte(e >> 16)
					e = t.lit[bits&(1<<litTableBits-1)]
					out[op] = v
					op++
					continue
				}
			}
			if e&flagEnd != 0 {
				d.endBlock()
				done = true
				break
			}
			if e&flagInvalid != 0 {
				err = d.corruptAt(ip, nb)
				break
			}
		}
		length := int(e>>16) + int((saved&(1<<(e&63)-1))>>((e>>8)&15))

		if nb < 39 {
			bits, ip, nb = refill(in, ip, bits, nb)
		}
		e = t.dist[bits&(1<<distTableBits-1)]
		if e&flagExceptional != 0 {
			if e&flagLink != 0 {
				bits >>= distTableBits
				nb -= distTableBits
				e = t.dist[uint(e>>16)+uint(bits&(1<<((e>>8)&15)-1))]
			}
			if e&flagInvalid != 0 {
				err = d.corruptAt(ip, nb)
				break
			}
		}
		saved = bits
		bits >>= e & 63
		nb -= uint(e & 63)
		distance := int(e>>16) + int((saved&(1<<(e&63)-1))>>((e>>8)&15))
		e = t.lit[bits&(1<<litTableBits-1)]
		if distance > op {
			err = d.corruptAt(ip, nb)
			break
		}

		src := op - distance
		end := op + length
		switch {
		case distance >= 8:
			// Two words first, which most matches need no more than.
			binary.LittleEndian.PutUint64(out[op:], binary.LittleEndian.Uint64(out[src:]))
			binary.LittleEndian.PutUint64(out[op+8:], binary.LittleEndian.Uint64(out[src+8:]))
			op += 16
			src += 16
			for op < end {
				binary.LittleEndian.PutUint64(out[op:], binary.LittleEndian.Uint64(out[src:]))
				op += 8
				src += 8
			}
		case distance == 1:
			v := uint64(out[src]) * 0x0101010101010101
			for op < end {
				binary.LittleEndian.PutUint64(out[op:], v)
				op += 8
			}
		default:
			for op < end {
				op += copy(out[op:end], out[src:op])
			}
		}
		op = end
	}
	d.bits = bits & (1<<nb - 1) // the bits above nb are the next bytes': drop them
	d.nb, d.ip, d.op = nb, ip, op
	return done, err
}

// refill adds the eight bytes at in[ip:] to the bit buffer bits above its
// nb bits, and returns it with ip moved past the whole bytes now in it and
// nb, now 56 or more. The bits above nb are the next bytes': callers mask
// them off when they keep the buffer.
func refill(in []byte, ip int, bits uint64, nb uint) (uint64, int, uint) {
	bits |= binary.LittleEndian.Uint64(in[ip:]) << (nb & 63)
	return bits, ip + int((63-nb)>>3), nb | 56
}

func (d *Decoder) corruptAt(ip int, nb uint) error {
	return CorruptInputError(d.read + int64(ip) - int64(nb/8))
}

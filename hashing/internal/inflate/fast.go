package inflate

import "encoding/binary"

// fast decodes symbols while at least inMargin bytes of input and
// outMargin bytes of output are left, which is all of a stream but its
// last bytes: the bit buffer is refilled eight bytes at a time, and holds
// 56 bits or more after a refill, enough for a length and a distance with
// their extra bits, or for three literals of the main table (codes of 11
// bits at most). It says whether the block ended.
//
// Every shift count is masked with 63: no entry's count reaches it, and
// the mask spares the checks Go adds for larger ones.
func (d *Decoder) fast() (bool, error) {
	in, out := d.in, d.out
	lit, dist := d.lit, d.dist
	bits, nb, ip, op := d.bits, d.nb, d.ip, d.op
	inLimit := len(in) - inMargin
	outLimit := len(out) - outMargin
	done := false
	var err error
	for ip <= inLimit && op <= outLimit {
		bits |= binary.LittleEndian.Uint64(in[ip:]) << (nb & 63)
		ip += int((63 - nb) >> 3)
		nb |= 56

		e := lit[bits&(1<<litTableBits-1)]
		if e&flagLiteral != 0 {
			// Up to three literals of the main table, then a refill.
			bits >>= e & 63
			nb -= uint(e & 63)
			out[op] = byte(e >> 16)
			op++
			e = lit[bits&(1<<litTableBits-1)]
			if e&flagLiteral != 0 {
				bits >>= e & 63
				nb -= uint(e & 63)
				out[op] = byte(e >> 16)
				op++
				e = lit[bits&(1<<litTableBits-1)]
				if e&flagLiteral != 0 {
					bits >>= e & 63
					nb -= uint(e & 63)
					out[op] = byte(e >> 16)
					op++
					continue
				}
			}
			bits |= binary.LittleEndian.Uint64(in[ip:]) << (nb & 63)
			ip += int((63 - nb) >> 3)
			nb |= 56
		}
		if e&flagExceptional != 0 {
			if e&flagLink != 0 {
				bits >>= litTableBits
				nb -= litTableBits
				e = lit[uint(e>>16)+uint(bits&(1<<((e>>8)&15)-1))]
				if e&flagLiteral != 0 {
					bits >>= e & 63
					nb -= uint(e & 63)
					out[op] = byte(e >> 16)
					op++
					continue
				}
			}
			if e&flagEnd != 0 {
				bits >>= e & 63
				nb -= uint(e & 63)
				d.endBlock()
				done = true
				break
			}
			if e&flagInvalid != 0 {
				err = d.corruptAt(ip, nb)
				break
			}
		}
		saved := bits
		bits >>= e & 63
		nb -= uint(e & 63)
		length := int(e>>16) + int((saved&(1<<(e&63)-1))>>((e>>8)&15))

		e = dist[bits&(1<<distTableBits-1)]
		if e&flagExceptional != 0 {
			if e&flagLink != 0 {
				bits >>= distTableBits
				nb -= distTableBits
				e = dist[uint(e>>16)+uint(bits&(1<<((e>>8)&15)-1))]
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

func (d *Decoder) corruptAt(ip int, nb uint) error {
	return CorruptInputError(d.read + int64(ip) - int64(nb/8))
}

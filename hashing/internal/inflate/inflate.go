// Package inflate decodes DEFLATE streams (RFC 1951), the data of zip
// entries, for the h1: hashes the hashing package computes: the same
// output as compress/flate, and an error for exactly the streams it
// refuses, about three times as fast.
//
// It owns the decoding only: hashing decides what to decode, with which
// limits, and what the output is checked against. The techniques are
// libdeflate's: a 64-bit bit buffer refilled eight bytes at a time without
// branches, table entries that give a symbol's value and its extra bits in
// one lookup (with links to subtables for long codes), the next symbol's
// entry looked up before the refill and the match copy, up to three
// literals per refill, and matches copied eight bytes at a time. The loop
// that decodes all but the last bytes of a stream is written twice: in Go
// (fastGeneric, every platform) and in assembly for amd64 (fast_amd64.s),
// which keeps every value of the loop in a register; the tests hold both
// to compress/flate, and the build tag purego leaves the assembly out.
//
// A Decoder reads its input through a bufio.Reader and consumes exactly
// the stream's bytes from it, so that a zip parser reading the same
// bufio.Reader finds the next record right after the stream; it decodes
// into a buffer of 32 KiB of history and 256 KiB of output, so its memory
// is bounded whatever the stream says.
package inflate

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

const (
	windowSize = 1 << 15
	chunkSize  = 256 << 10
	maxMatch   = 258
	// The decoder stops for its output to be taken when less than this
	// is left: a literal and a match, and the eight bytes a match copy may
	// write past its end.
	outMargin = 1 + maxMatch + 8 + 8
	// The fast loop runs while this many input bytes are buffered: two
	// refills of eight bytes.
	inMargin = 16
	// Input is read ahead in steps of at least this many bytes.
	minView = 4 << 10
	// outSize is the output buffer's size: the history, a chunk and the margin.
	outSize = windowSize + chunkSize + outMargin
)

// CorruptInputError is the offset, in the stream's bytes, near which the
// stream stops being valid DEFLATE.
type CorruptInputError int64

func (e CorruptInputError) Error() string {
	return fmt.Sprintf("flate: corrupt input near offset %d", int64(e))
}

type state uint8

const (
	stateHeader state = iota
	stateStored
	stateHuffman
	stateDone
)

// A Decoder decodes one DEFLATE stream at a time. Its zero value is not
// usable: get one with NewDecoder, then Reset it for each stream.
type Decoder struct {
	src  *bufio.Reader
	in   []byte // what src holds buffered, from the first byte not consumed
	ip   int    // in[:ip] is consumed or in the bit buffer
	eof  bool   // src has nothing more
	bits uint64 // the bit buffer: nb bits valid, in[ip-nb/8:ip] whole in it
	nb   uint
	read int64 // bytes of the stream consumed before in

	out []byte // history, then output not taken yet
	op  int    // out[:op] is written: history is all of it
	rd  int    // out[rd:op] is not taken yet

	state  state
	final  bool
	stored int     // bytes left of a stored block
	tables *tables // the block's: &fixed or &d.dynamic
	err    error

	dynamic  tables
	preTable [preTableSize]uint32
	lens     [maxNumLit + maxNumDist]uint8
}

// NewDecoder returns a Decoder for the stream src holds.
func NewDecoder(src *bufio.Reader) *Decoder {
	d := &Decoder{out: make([]byte, outSize)}
	d.Reset(src)
	return d
}

// Reset makes d decode the stream src holds from its next byte, forgetting
// the last one.
func (d *Decoder) Reset(src *bufio.Reader) {
	*d = Decoder{src: src, out: d.out}
}

// Read reads the stream's output, io.EOF once it ended well.
func (d *Decoder) Read(p []byte) (int, error) {
	for {
		if d.rd < d.op {
			n := copy(p, d.out[d.rd:d.op])
			d.rd += n
			return n, nil
		}
		if d.err != nil {
			return 0, d.err
		}
		d.fill()
	}
}

// WriteTo decodes the whole stream into w: nil once it ended well.
// It returns w's first error as it is.
func (d *Decoder) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if d.rd < d.op {
			n, err := w.Write(d.out[d.rd:d.op])
			total += int64(n)
			d.rd += n
			if err != nil {
				return total, err
			}
		}
		if d.err != nil {
			if errors.Is(d.err, io.EOF) {
				return total, nil
			}
			return total, d.err
		}
		d.fill()
	}
}

// fill decodes until the output buffer is nearly full, the stream ends or
// an error, which it records in d.err (io.EOF at the end of the stream).
func (d *Decoder) fill() {
	if d.op > len(d.out)-outMargin {
		// Everything was taken: keep the last 32 KiB as history.
		keep := min(d.op, windowSize)
		copy(d.out, d.out[d.op-keep:d.op])
		d.op, d.rd = keep, keep
	}
	for d.err == nil && d.op <= len(d.out)-outMargin {
		switch d.state {
		case stateHeader:
			d.err = d.header()
		case stateStored:
			d.err = d.storedData()
		case stateHuffman:
			d.err = d.huffman()
		case stateDone:
			d.finish()
			d.err = io.EOF
		}
	}
}

// endBlock moves on after a block's end.
func (d *Decoder) endBlock() {
	if d.final {
		d.state = stateDone
	} else {
		d.state = stateHeader
	}
}

// finish consumes the stream's bytes from the input, and no more.
func (d *Decoder) finish() {
	_, _ = d.src.Discard(d.ip - int(d.nb/8)) // buffered: never fails
	d.in, d.ip, d.bits, d.nb = nil, 0, 0, 0
}

// more reads ahead: in then holds whatever the input holds buffered
// (reading at least minView bytes when it holds fewer), from the first
// byte not consumed. It sets eof when the input has nothing more, and
// returns the input's errors other than io.EOF.
func (d *Decoder) more() error {
	if d.eof {
		return nil
	}
	keep := int(d.nb / 8) // whole bytes in the bit buffer, still in src
	consumed := d.ip - keep
	_, _ = d.src.Discard(consumed) // buffered: never fails
	d.read += int64(consumed)
	d.ip = keep
	before := d.src.Buffered()
	var err error
	if before < keep+minView {
		_, err = d.src.Peek(min(keep+minView, d.src.Size()))
	}
	n := d.src.Buffered()
	d.in, _ = d.src.Peek(n) // buffered: never fails
	switch {
	case err == nil || n > before:
		return nil
	case errors.Is(err, io.EOF):
		d.eof = true
		return nil
	default:
		return err
	}
}

// tryBits reads bytes into the bit buffer until it holds n bits or the
// input ends: eight bytes at once while the input has them (as the fast
// loop refills, keeping no bit above nb), else byte by byte.
func (d *Decoder) tryBits(n uint) error {
	if d.nb < n && d.ip+8 <= len(d.in) {
		d.bits, d.ip, d.nb = refill(d.in, d.ip, d.bits, d.nb)
		d.bits &= 1<<d.nb - 1
	}
	for d.nb < n {
		if d.ip < len(d.in) {
			d.bits |= uint64(d.in[d.ip]) << d.nb
			d.ip++
			d.nb += 8
			continue
		}
		if d.eof {
			return nil
		}
		if err := d.more(); err != nil {
			return err
		}
	}
	return nil
}

// needBits is tryBits for bits that must be there.
func (d *Decoder) needBits(n uint) error {
	if err := d.tryBits(n); err != nil {
		return err
	}
	if d.nb < n {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// take consumes n bits and returns them.
func (d *Decoder) take(n uint) uint32 {
	v := uint32(d.bits & (1<<n - 1))
	d.bits >>= n
	d.nb -= n
	return v
}

func (d *Decoder) corrupt() error {
	return CorruptInputError(d.read + int64(d.ip) - int64(d.nb/8))
}

// header reads a block's header, and its code lengths for a dynamic one.
func (d *Decoder) header() error {
	if err := d.needBits(3); err != nil {
		return err
	}
	d.final = d.take(1) == 1
	switch d.take(2) {
	case 0:
		return d.storedHeader()
	case 1:
		d.tables = &fixed
		d.state = stateHuffman
		return nil
	case 2:
		return d.dynamicHeader()
	default:
		return d.corrupt()
	}
}

// storedHeader reads a stored block's length, from the next whole byte.
func (d *Decoder) storedHeader() error {
	d.take(d.nb % 8)
	d.ip -= int(d.nb / 8) // the whole bytes go back to the input
	d.bits, d.nb = 0, 0
	for len(d.in)-d.ip < 4 {
		if d.eof {
			return io.ErrUnexpectedEOF
		}
		if err := d.more(); err != nil {
			return err
		}
	}
	b := d.in[d.ip : d.ip+4]
	d.ip += 4
	n := int(b[0]) | int(b[1])<<8
	if uint16(int(b[2])|int(b[3])<<8) != uint16(^n) {
		return d.corrupt()
	}
	d.stored = n
	d.state = stateStored
	if n == 0 {
		d.endBlock()
	}
	return nil
}

// storedData copies a stored block's bytes, as many as the output holds.
func (d *Decoder) storedData() error {
	for d.stored > 0 && d.op < len(d.out) {
		if d.ip == len(d.in) {
			if d.eof {
				return io.ErrUnexpectedEOF
			}
			if err := d.more(); err != nil {
				return err
			}
			continue
		}
		n := copy(d.out[d.op:min(d.op+d.stored, len(d.out))], d.in[d.ip:])
		d.ip += n
		d.op += n
		d.stored -= n
	}
	if d.stored == 0 {
		d.endBlock()
	}
	return nil
}

// codeOrder is the order of the code-length code's lengths (RFC 1951,
// 3.2.7).
var codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamicHeader reads a dynamic block's code lengths and builds its
// tables, refusing what compress/flate refuses.
func (d *Decoder) dynamicHeader() error {
	if err := d.needBits(14); err != nil {
		return err
	}
	nlit := int(d.take(5)) + 257
	if nlit > maxNumLit {
		return d.corrupt()
	}
	ndist := int(d.take(5)) + 1
	if ndist > maxNumDist {
		return d.corrupt()
	}
	nclen := int(d.take(4)) + 4
	var pre [19]uint8
	for _, sym := range codeOrder[:nclen] {
		if err := d.needBits(3); err != nil {
			return err
		}
		pre[sym] = uint8(d.take(3))
	}
	if !build(d.preTable[:], pre[:], preTableBits, preParts[:]) {
		return d.corrupt()
	}
	lens := d.lens[:nlit+ndist]
	for i := 0; i < len(lens); {
		e, _, err := d.slowEntry(d.preTable[:], preTableBits)
		if err != nil {
			return err
		}
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		rep, nb, val := uint32(3), uint(2), uint8(0)
		switch sym {
		case 16:
			if i == 0 {
				return d.corrupt()
			}
			val = lens[i-1]
		case 17:
			nb = 3
		default: // 18
			rep, nb = 11, 7
		}
		if err := d.needBits(nb); err != nil {
			return err
		}
		rep += d.take(nb)
		if i+int(rep) > len(lens) {
			return d.corrupt()
		}
		for range rep {
			lens[i] = val
			i++
		}
	}
	if !build(d.dynamic.lit[:], lens[:nlit], litTableBits, litParts[:]) ||
		!build(d.dynamic.dist[:], lens[nlit:], distTableBits, distParts[:]) {
		return d.corrupt()
	}
	d.tables = &d.dynamic
	d.state = stateHuffman
	return nil
}

// slowEntry decodes one symbol bit by bit as the input allows: its entry
// and the value of its extra bits.
func (d *Decoder) slowEntry(table []uint32, tableBits uint) (uint32, uint32, error) {
	if err := d.tryBits(maxCodeLen + 13); err != nil {
		return 0, 0, err
	}
	e := table[d.bits&(1<<tableBits-1)]
	used := uint(0)
	if e&flagLink != 0 {
		used = tableBits
		e = table[uint(e>>16)+uint(d.bits>>tableBits)&(1<<((e>>8)&15)-1)]
	}
	if e&flagInvalid != 0 {
		return 0, 0, d.corrupt()
	}
	total := used + uint(e&0xff)
	if total > d.nb {
		return 0, 0, io.ErrUnexpectedEOF
	}
	rest := d.bits >> used
	extra := uint32(rest&(1<<(e&0xff)-1)) >> ((e >> 8) & 15)
	d.bits >>= total
	d.nb -= total
	return e, extra, nil
}

// huffman decodes a Huffman block until its end or a full output buffer:
// fast while the input and the output have room, symbol by symbol near
// their ends.
func (d *Decoder) huffman() error {
	for d.op <= len(d.out)-outMargin {
		if len(d.in)-d.ip < inMargin+minView/2 && !d.eof {
			if err := d.more(); err != nil {
				return err
			}
		}
		if len(d.in)-d.ip >= inMargin {
			if done, err := d.fast(); err != nil || done {
				return err
			}
			continue
		}
		if done, err := d.slowSymbol(); err != nil || done {
			return err
		}
	}
	return nil
}

// slowSymbol decodes one literal, match or end of block.
func (d *Decoder) slowSymbol() (bool, error) {
	e, length, err := d.slowEntry(d.tables.lit[:], litTableBits)
	if err != nil {
		return false, err
	}
	switch {
	case e&flagLiteral != 0:
		d.out[d.op] = byte(e >> 16)
		d.op++
		return false, nil
	case e&flagEnd != 0:
		d.endBlock()
		return true, nil
	}
	length += e >> 16
	de, dist, err := d.slowEntry(d.tables.dist[:], distTableBits)
	if err != nil {
		return false, err
	}
	dist += de >> 16
	if int(dist) > d.op {
		return false, d.corrupt()
	}
	d.op = copyMatch(d.out, d.op, int(dist), int(length))
	return false, nil
}

// copyMatch copies length bytes from dist bytes back to out[op:], and
// returns the new end. It may write up to eight bytes past it.
func copyMatch(out []byte, op, dist, length int) int {
	end := op + length
	src := op - dist
	switch {
	case dist >= length:
		copy(out[op:end], out[src:src+length])
	case dist >= 8:
		for op < end {
			copy(out[op:op+8], out[src:src+8])
			op += 8
			src += 8
		}
	default:
		for op < end {
			n := copy(out[op:end], out[src:op])
			op += n
		}
	}
	return end
}

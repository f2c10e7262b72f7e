//go:build amd64 && !purego

package inflate

// fastState is what decodeFast reads and updates; the assembly knows its
// offsets (TestFastStateLayout holds them).
type fastState struct {
	in       *byte   // the input: in[:inLimit+inMargin] is readable
	inLimit  int     // the loop runs while ip <= inLimit ...
	out      *byte   // the output buffer, outSize bytes
	outLimit int     // ... and op <= outLimit
	tables   *tables // the block's tables
	bits     uint64
	nb       uint
	ip       int
	op       int
}

// What decodeFast returns.
const (
	fastLimit   = 0 // the input or the output is near its end
	fastEnd     = 1 // the block ended
	fastCorrupt = 2 // the stream is not valid DEFLATE
)

// decodeFast is fastGeneric's loop in assembly, the same decisions in
// the same order (fast_amd64.s).
//
//go:noescape
func decodeFast(s *fastState) int

// fast decodes symbols while at least inMargin bytes of input and
// outMargin bytes of output are left (see fastGeneric).
func (d *Decoder) fast() (bool, error) {
	if forceGeneric {
		return d.fastGeneric()
	}
	out := (*[outSize]byte)(d.out)
	s := fastState{
		in: &d.in[0], inLimit: len(d.in) - inMargin,
		out: &out[0], outLimit: outSize - outMargin,
		tables: d.tables,
		bits:   d.bits, nb: d.nb, ip: d.ip, op: d.op,
	}
	r := decodeFast(&s)
	d.bits = s.bits & (1<<s.nb - 1) // the bits above nb are the next bytes': drop them
	d.nb, d.ip, d.op = s.nb, s.ip, s.op
	switch r {
	case fastEnd:
		d.endBlock()
		return true, nil
	case fastCorrupt:
		return false, d.corruptAt(s.ip, s.nb)
	}
	return false, nil
}

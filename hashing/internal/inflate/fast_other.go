//go:build !amd64 || purego

package inflate

// fast decodes symbols while at least inMargin bytes of input and
// outMargin bytes of output are left (see fastGeneric).
func (d *Decoder) fast() (bool, error) { return d.fastGeneric() }

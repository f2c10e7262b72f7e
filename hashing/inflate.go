package hashing

import (
	"archive/zip"
	"bufio"
	"errors"
	"io"
	"sync"

	"github.com/tfmirror/tfmirror/hashing/internal/inflate"
)

// inflateBufferSize is how much compressed input a decoder reads at a time:
// large enough that reading an archive costs few system calls.
const inflateBufferSize = 64 << 10

// useFastInflate makes zr decompress Deflate entries with the package's
// own decoder (hashing/internal/inflate, held to compress/flate by its
// tests). It is registered on this reader only, never globally, so that
// nothing else in the process changes decoder.
func useFastInflate(zr *zip.Reader) {
	zr.RegisterDecompressor(zip.Deflate, newInflateReader)
}

// inflater is a reusable Deflate decoder reading through its own buffer.
type inflater struct {
	br  *bufio.Reader
	dec *inflate.Decoder
}

var inflaters sync.Pool

// getInflater returns a decoder for the Deflate stream br holds, from the
// pool; with br nil, it reads r through a buffer of its own.
func getInflater(r io.Reader, br *bufio.Reader) *inflater {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{br: bufio.NewReaderSize(nil, inflateBufferSize)}
		in.dec = inflate.NewDecoder(nil)
	}
	src := br
	if src == nil {
		in.br.Reset(r)
		src = in.br
	}
	in.dec.Reset(src)
	return in
}

// put returns in to the pool, holding no reference to its input.
func (in *inflater) put() {
	in.br.Reset(nil)
	in.dec.Reset(nil)
	inflaters.Put(in)
}

// inflateReader is the zip decompressor: a pooled inflater that goes back
// to the pool when closed.
type inflateReader struct {
	in *inflater
}

func newInflateReader(r io.Reader) io.ReadCloser {
	return &inflateReader{in: getInflater(r, nil)}
}

func (r *inflateReader) Read(p []byte) (int, error) {
	if r.in == nil {
		return 0, errors.New("read of a closed decompressor")
	}
	return r.in.dec.Read(p)
}

func (r *inflateReader) Close() error {
	if r.in == nil {
		return nil
	}
	r.in.put()
	r.in = nil
	return nil
}

// inflateTo decompresses the Deflate stream br holds into w, consuming
// exactly its bytes from br. It returns w's errors as they are.
func inflateTo(w io.Writer, br *bufio.Reader) error {
	in := getInflater(nil, br)
	defer in.put()
	_, err := in.dec.WriteTo(w)
	return err
}

package hashing

import (
	"archive/zip"
	"bufio"
	"errors"
	"io"
	"sync"

	// A pure-Go Deflate decoder, about 1.4 times as fast as compress/flate
	// on provider archives (see stream_test.go's benchmarks), which h1:
	// spends most of its time in. Held to compress/flate by
	// FuzzFastInflate.
	"github.com/klauspost/compress/flate"
)

// inflateBufferSize is how much compressed input a decoder reads at a time:
// large enough that reading an archive costs few system calls.
const inflateBufferSize = 64 << 10

// useFastInflate makes zr decompress Deflate entries with the fast decoder.
// It is registered on this reader only, never globally, so that nothing
// else in the process changes decoder.
func useFastInflate(zr *zip.Reader) {
	zr.RegisterDecompressor(zip.Deflate, newInflateReader)
}

// inflater is a reusable Deflate decoder reading through its own buffer.
// The decoder never asks for input past the end of a valid stream (it
// reads byte by byte from a ByteReader), so the input notes whether it
// asked for more than there was: the decoder itself may report a stream
// cut short as a clean end, where compress/flate reports an error.
type inflater struct {
	in  eofReader
	br  *bufio.Reader
	dec io.ReadCloser // also a flate.Resetter
}

var inflaters sync.Pool

// getInflater returns a decoder for the Deflate stream r, from the pool.
func getInflater(r io.Reader) *inflater {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{}
		in.in.r = r
		in.br = bufio.NewReaderSize(&in.in, inflateBufferSize)
		in.dec = flate.NewReader(in.br)
		return in
	}
	in.in = eofReader{r: r}
	in.br.Reset(&in.in)
	_ = in.dec.(flate.Resetter).Reset(in.br, nil) // never fails
	return in
}

// put returns in to the pool, holding no reference to its input.
func (in *inflater) put() {
	in.in = eofReader{}
	in.br.Reset(&in.in)
	inflaters.Put(in)
}

// check turns the decoder's io.EOF into io.ErrUnexpectedEOF when the input
// ended first, as compress/flate reports it.
func (in *inflater) check(err error) error {
	if errors.Is(err, io.EOF) && in.in.eof {
		return io.ErrUnexpectedEOF
	}
	return err
}

// eofReader notes when its reader is asked for more after the end of
// input: an end that arrives with the last bytes is held back until the
// next read, so that only a decoder that needed more than there was sees
// it.
type eofReader struct {
	r       io.Reader
	pending bool // the end came with the last bytes
	eof     bool // a read found nothing left
}

func (e *eofReader) Read(p []byte) (int, error) {
	if e.r == nil || e.pending {
		e.eof = true
		return 0, io.EOF
	}
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		if n > 0 {
			e.pending = true
			return n, nil
		}
		e.eof = true
	}
	return n, err
}

// inflateReader is the zip decompressor: a pooled inflater that goes back
// to the pool when closed.
type inflateReader struct {
	in *inflater
}

func newInflateReader(r io.Reader) io.ReadCloser {
	return &inflateReader{in: getInflater(r)}
}

func (r *inflateReader) Read(p []byte) (int, error) {
	if r.in == nil {
		return 0, errors.New("read of a closed decompressor")
	}
	n, err := r.in.dec.Read(p)
	return n, r.in.check(err)
}

func (r *inflateReader) Close() error {
	if r.in == nil {
		return nil
	}
	r.in.put()
	r.in = nil
	return nil
}

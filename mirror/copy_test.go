package mirror

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// writeSizes records the size of every write.
type writeSizes struct {
	bytes.Buffer
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

func (w *writeSizes) Reset() error {
	w.Buffer.Reset()
	w.sizes = nil
	return nil
}

func TestCopyArchiveWritesInChunks(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (copyChunk*2+1000)/16)
	var w writeSizes
	// A connection gives a record at a time; and the last bytes with EOF.
	src := iotest.DataErrReader(&recordReader{r: bytes.NewReader(data), size: 16 << 10})
	if err := CopyArchive(&w, src); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.Bytes(), data) {
		t.Fatalf("copied %d bytes, not the %d read", w.Len(), len(data))
	}
	if want := []int{copyChunk, copyChunk, len(data) - 2*copyChunk}; !slices.Equal(w.sizes, want) {
		t.Errorf("writes of %v bytes, want %v", w.sizes, want)
	}
}

func TestCopyArchiveKeepsWhatCameBeforeAnError(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 40000)
	var w writeSizes
	src := io.MultiReader(&recordReader{r: bytes.NewReader(data), size: 16 << 10}, iotest.ErrReader(io.ErrUnexpectedEOF))
	if err := CopyArchive(&w, src); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("CopyArchive of a cut transfer: %v, want io.ErrUnexpectedEOF", err)
	}
	if w.Len() != len(data) {
		t.Errorf("the sink holds %d of the %d bytes received before the error", w.Len(), len(data))
	}
}

// recordReader gives at most size bytes per read.
type recordReader struct {
	r    io.Reader
	size int
}

func (r *recordReader) Read(p []byte) (int, error) {
	return r.r.Read(p[:min(len(p), r.size)])
}

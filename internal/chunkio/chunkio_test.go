package chunkio

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

// recordReader gives at most size bytes per read, as a TLS connection
// gives a record at a time.
type recordReader struct {
	r    io.Reader
	size int
}

func (r *recordReader) Read(p []byte) (int, error) {
	return r.r.Read(p[:min(len(p), r.size)])
}

func TestCopyWritesInChunks(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), (Chunk*2+1000)/16)
	var w writeSizes
	// The last bytes come with io.EOF.
	src := iotest.DataErrReader(&recordReader{r: bytes.NewReader(data), size: 16 << 10})
	n, err := Copy(&w, src)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(data)) || !bytes.Equal(w.Bytes(), data) {
		t.Fatalf("copied %d bytes (said %d), not the %d read", w.Len(), n, len(data))
	}
	if want := []int{Chunk, Chunk, len(data) - 2*Chunk}; !slices.Equal(w.sizes, want) {
		t.Errorf("writes of %v bytes, want %v", w.sizes, want)
	}
}

func TestCopyKeepsWhatCameBeforeAnError(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 40000)
	var w writeSizes
	src := io.MultiReader(&recordReader{r: bytes.NewReader(data), size: 16 << 10}, iotest.ErrReader(io.ErrUnexpectedEOF))
	n, err := Copy(&w, src)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Copy of a cut transfer: %v, want io.ErrUnexpectedEOF", err)
	}
	if n != int64(len(data)) || w.Len() != len(data) {
		t.Errorf("dst holds %d (said %d) of the %d bytes received before the error", w.Len(), n, len(data))
	}
}

// failingWriter takes limit bytes, then fails.
type failingWriter struct {
	n, limit int
}

var errFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		k := w.limit - w.n
		w.n = w.limit
		return k, errFull
	}
	w.n += len(p)
	return len(p), nil
}

func TestCopyStopsAtAWriteError(t *testing.T) {
	src := &recordReader{r: bytes.NewReader(make([]byte, 3*Chunk)), size: 16 << 10}
	w := &failingWriter{limit: Chunk + 100}
	n, err := Copy(w, src)
	if !errors.Is(err, errFull) || n != Chunk+100 {
		t.Fatalf("Copy into a writer that fails: %d, %v; want %d, %v", n, err, Chunk+100, errFull)
	}
}

// shortWriter writes one byte less than asked, without an error.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) - 1, nil }

func TestCopyShortWrite(t *testing.T) {
	if _, err := Copy(shortWriter{}, bytes.NewReader([]byte("abc"))); !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("short write: %v, want io.ErrShortWrite", err)
	}
}

package chunkio

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
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

// countingReader counts the bytes taken from r, and gives (0, nil) on
// every other read, as an io.Reader may.
type countingReader struct {
	r     io.Reader
	taken int
	idle  bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.idle = !c.idle; c.idle {
		return 0, nil
	}
	n, err := c.r.Read(p)
	c.taken += n
	return n, err
}

func TestCopyLimited(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 40_000) // 640,000 bytes: three chunks
	for _, tc := range []struct {
		name    string
		size    int
		limit   int64
		wantErr error
	}{
		{"no limit", len(data), NoLimit, nil},
		{"exactly the limit", len(data), int64(len(data)), nil},
		{"under the limit", len(data) - 1, int64(len(data)), nil},
		{"one byte past", len(data), int64(len(data) - 1), ErrPastLimit},
		{"past at a chunk's end", len(data), Chunk, ErrPastLimit},
		{"nothing may come, nothing does", 0, 0, nil},
		{"nothing may come, a byte does", 1, 0, ErrPastLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingReader{r: &recordReader{r: bytes.NewReader(data[:tc.size]), size: 16 << 10}}
			var dst bytes.Buffer
			n, err := CopyLimited(&dst, src, tc.limit)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			want := tc.size
			if tc.wantErr != nil {
				want = int(tc.limit) // what came before the limit, no byte past it
			}
			if n != int64(want) || !bytes.Equal(dst.Bytes(), data[:want]) {
				t.Errorf("wrote %d bytes (%d in dst), want the first %d", n, dst.Len(), want)
			}
			if tc.limit >= 0 && int64(src.taken) > tc.limit+1 {
				t.Errorf("read %d bytes of the source, more than the limit %d and one", src.taken, tc.limit)
			}
		})
	}
}

// A failed write is told from a failed read: the destination's side.
func TestCopyTellsTheWriteSide(t *testing.T) {
	full := errors.New("no space left on device")
	_, err := Copy(failWriter{full}, strings.NewReader("data"))
	if !IsWrite(err) || !errors.Is(err, full) || err.Error() != full.Error() {
		t.Errorf("a failed write: %v (IsWrite %v), want the write's error, marked", err, IsWrite(err))
	}
	broken := errors.New("connection reset")
	_, err = Copy(io.Discard, io.MultiReader(strings.NewReader("data"), errReader{broken}))
	if IsWrite(err) || !errors.Is(err, broken) {
		t.Errorf("a failed read: %v (IsWrite %v), want the read's error, not marked", err, IsWrite(err))
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

package inflate

import (
	"bufio"
	"bytes"
	"compress/flate"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
)

// reference decodes data with compress/flate from a ByteReader, which it
// reads no further than the stream: its output, how many bytes it
// consumed, and its error.
func reference(data []byte) ([]byte, int, error) {
	r := bytes.NewReader(data)
	out, err := io.ReadAll(flate.NewReader(r))
	return out, len(data) - r.Len(), err
}

// decode decodes data with a Decoder reading through a bufio.Reader of
// size bufSize (at least 16), with WriteTo or with Read: its output,
// how many bytes it left consumed in the bufio.Reader, and its error.
func decode(data []byte, bufSize int, useRead bool) ([]byte, int, error) {
	r := bytes.NewReader(data)
	br := bufio.NewReaderSize(struct{ io.Reader }{r}, bufSize)
	d := NewDecoder(br)
	var out bytes.Buffer
	var err error
	if useRead {
		_, err = io.CopyBuffer(&out, struct{ io.Reader }{d}, make([]byte, 1+bufSize%5000))
	} else {
		_, err = d.WriteTo(&out)
	}
	return out.Bytes(), len(data) - r.Len() - br.Buffered(), err
}

// same holds the Decoder to compress/flate on data: an error for the same
// streams, and on success the same output and the same bytes consumed;
// with the fast loop the platform has (assembly on amd64) and with the
// generic one.
func same(t *testing.T, data []byte, bufSize int, useRead bool) {
	t.Helper()
	want, wn, werr := reference(data)
	sameAs(t, data, bufSize, useRead, want, wn, werr)
	forceGeneric = true
	defer func() { forceGeneric = false }()
	sameAs(t, data, bufSize, useRead, want, wn, werr)
}

func sameAs(t *testing.T, data []byte, bufSize int, useRead bool, want []byte, wn int, werr error) {
	t.Helper()
	got, gn, gerr := decode(data, bufSize, useRead)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("compress/flate: %v; inflate (generic loop: %v): %v (%d bytes in, buffer %d)", werr, forceGeneric, gerr, len(data), bufSize)
	}
	if werr != nil {
		// Both refuse it: a truncated stream the same way.
		if errors.Is(werr, io.ErrUnexpectedEOF) && !errors.Is(gerr, io.ErrUnexpectedEOF) {
			var c CorruptInputError
			if !errors.As(gerr, &c) {
				t.Fatalf("compress/flate: %v; inflate: %v", werr, gerr)
			}
		}
		return
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("compress/flate gave %d bytes, inflate (generic loop: %v) %d different ones", len(want), forceGeneric, len(got))
	}
	if useRead {
		return // archive/zip's use: what is consumed past the stream does not matter
	}
	if gn != wn {
		t.Fatalf("compress/flate consumed %d bytes, inflate %d", wn, gn)
	}
}

func compress(t testing.TB, data []byte, level int) []byte {
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, level)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(data)
	_ = w.Close()
	return buf.Bytes()
}

func testData(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]byte, 0, n)
	words := [][]byte{[]byte("provider "), []byte("resource "), []byte("\x00\x00\x00\x00"), []byte("schema"), {0x48, 0x8b, 0x44, 0x24}}
	for len(out) < n {
		switch rng.IntN(4) {
		case 0:
			out = append(out, byte(rng.Uint32()))
		case 1:
			out = append(out, words[rng.IntN(len(words))]...)
		case 2:
			if len(out) > 300 {
				at := rng.IntN(len(out) - 260)
				out = append(out, out[at:at+3+rng.IntN(255)]...)
			}
		default:
			out = append(out, bytes.Repeat([]byte{byte(rng.Uint32())}, rng.IntN(300))...)
		}
	}
	return out[:n]
}

func TestSameAsCompressFlate(t *testing.T) {
	for _, n := range []int{0, 1, 100, 70000, 600000} {
		data := testData(n, uint64(n))
		for _, level := range []int{flate.NoCompression, flate.BestSpeed, 5, flate.BestCompression, flate.HuffmanOnly} {
			stream := compress(t, data, level)
			stream = append(stream, "trailing bytes of the next record"...)
			for _, size := range []int{16, 100, 4096, 64 << 10} {
				same(t, stream, size, false)
				same(t, stream, size, true)
			}
			for _, cut := range []int{1, 2, 5, len(stream) / 2, len(stream) - 34, len(stream) - 40} {
				if cut > 0 && cut < len(stream) {
					same(t, stream[:cut], 64<<10, false)
				}
			}
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data := testData(4<<20, 7)
	stream := compress(b, data, flate.DefaultCompression)
	benchDecoders(b, data, stream)
}

// BenchmarkDecodeFile decodes the file $INFLATE_BENCH_FILE (say, a Go
// executable) deflated at level 5, as archive/zip and goreleaser do.
func BenchmarkDecodeFile(b *testing.B) {
	path := os.Getenv("INFLATE_BENCH_FILE")
	if path == "" {
		b.Skip("INFLATE_BENCH_FILE is not set")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	stream := compress(b, data, 5)
	benchDecoders(b, data, stream)
}

// benchDecoders decodes stream (data, deflated) with this package and
// with compress/flate, side by side.
func benchDecoders(b *testing.B, data, stream []byte) {
	b.Run("inflate", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		br := bufio.NewReaderSize(nil, 64<<10)
		d := NewDecoder(br)
		for b.Loop() {
			br.Reset(bytes.NewReader(stream))
			d.Reset(br)
			if _, err := d.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("compress-flate", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := io.Copy(io.Discard, flate.NewReader(bytes.NewReader(stream))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

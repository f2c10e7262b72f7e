package hashing

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// testEntry is one entry of a zip written by rawZip, which writes every
// record itself so that a test controls each field.
type testEntry struct {
	Name       string
	Body       []byte
	Method     uint16 // zip.Store or zip.Deflate
	Level      int    // of Deflate; 0 means flate.DefaultCompression
	Descriptor bool   // flag bit 3: zeros in the local header, then a data descriptor
	NoSig      bool   // a data descriptor without its signature
	LocalName  string // the local header's name, if not Name
	Flags      uint16 // more flag bits, in both headers
}

// rawZip returns entries as a zip: local headers, data and descriptors in
// order, then the central directory.
func rawZip(t testing.TB, entries ...testEntry) []byte {
	t.Helper()
	var out, dir bytes.Buffer
	le := func(b *bytes.Buffer, vs ...any) {
		for _, v := range vs {
			_ = binary.Write(b, binary.LittleEndian, v)
		}
	}
	for _, e := range entries {
		data := e.Body
		if e.Method == zip.Deflate {
			var buf bytes.Buffer
			level := e.Level
			if level == 0 {
				level = flate.DefaultCompression
			}
			fw, err := flate.NewWriter(&buf, level)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = fw.Write(e.Body)
			_ = fw.Close()
			data = buf.Bytes()
		}
		crc := crc32.ChecksumIEEE(e.Body)
		flags := e.Flags
		if e.Descriptor {
			flags |= flagDataDescriptor
		}
		local := e.LocalName
		if local == "" {
			local = e.Name
		}
		offset := uint32(out.Len())
		lcrc, lc, lu := crc, uint32(len(data)), uint32(len(e.Body))
		if e.Descriptor {
			lcrc, lc, lu = 0, 0, 0
		}
		le(&out, uint32(localHeaderSignature), uint16(20), flags, e.Method, uint16(0), uint16(0x21),
			lcrc, lc, lu, uint16(len(local)), uint16(0))
		out.WriteString(local)
		out.Write(data)
		if e.Descriptor {
			if !e.NoSig {
				le(&out, uint32(dataDescriptorSignature))
			}
			le(&out, crc, uint32(len(data)), uint32(len(e.Body)))
		}
		mode := uint32(0o100644)
		if strings.HasSuffix(e.Name, "/") {
			mode = 0o040755
		}
		le(&dir, uint32(centralHeaderSignature), uint16(3<<8|30), uint16(20), flags, e.Method, uint16(0), uint16(0x21),
			crc, uint32(len(data)), uint32(len(e.Body)), uint16(len(e.Name)), uint16(0), uint16(0),
			uint16(0), uint16(0), mode<<16, offset)
		dir.WriteString(e.Name)
	}
	dirOffset := out.Len()
	out.Write(dir.Bytes())
	le(&out, uint32(endOfDirectorySignature), uint16(0), uint16(0), uint16(len(entries)), uint16(len(entries)),
		uint32(dir.Len()), uint32(dirOffset), uint16(0))
	return out.Bytes()
}

// stream feeds data to a StreamHasher in chunks of the given size (0: all
// at once) and returns its result.
func stream(data []byte, chunk int, limits ZipLimits, opts StreamOptions) *StreamResult {
	s := NewStreamHasher(limits, opts)
	feed(s, data, chunk)
	return s.Close()
}

func feed(w io.Writer, data []byte, chunk int) {
	if chunk <= 0 {
		chunk = len(data)
	}
	for len(data) > 0 {
		n := min(chunk, len(data))
		_, _ = w.Write(data[:n])
		data = data[n:]
	}
}

func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pkg.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkStreamed hashes data with res and checks that the hashes are
// dirhash's (and refused exactly when HashArchive refuses). It returns
// whether the streamed hashes were used.
func checkStreamed(t testing.TB, data []byte, limits ZipLimits, res *StreamResult) bool {
	t.Helper()
	path := writeTemp(t, data)
	sum := sha256.Sum256(data)
	got, err := HashArchiveStreamed(path, sum, limits, res)
	want, werr := HashArchive(path, sum, limits)
	if (err == nil) != (werr == nil) || got != want {
		t.Fatalf("streamed: %v, %v; from the file: %v, %v (stream: %+v)", got, err, want, werr, res)
	}
	if err != nil {
		if res.Summarized {
			t.Errorf("a refused archive was summarized from the stream")
		}
		return false
	}
	ref, derr := dirhash.HashZip(path, dirhash.Hash1)
	if derr != nil || string(got.H1) != ref {
		t.Fatalf("H1 = %s, dirhash.HashZip = %s, %v", got.H1, ref, derr)
	}
	unpacked, uerr := H1Unpacked(path)
	if uerr != nil || got.H1Unpacked != unpacked {
		t.Fatalf("H1Unpacked = %s, want %s, %v", got.H1Unpacked, unpacked, uerr)
	}
	return res.Summarized
}

// semiCompressible returns n bytes that deflate to about half: random
// runs between runs of words, like a provider binary.
func semiCompressible(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	words := []string{"provider", "resource", "aws_instance", "schema", "terraform", "func", "0x00", "\x00\x00\x00\x00"}
	var b bytes.Buffer
	for b.Len() < n {
		if rng.IntN(3) == 0 {
			chunk := make([]byte, 1+rng.IntN(2048))
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			b.Write(chunk)
			continue
		}
		for range 1 + rng.IntN(200) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

var followable = map[string][]testEntry{
	"stored and deflated": {
		{Name: "terraform-provider-foo_v1.0.0", Body: []byte("#!/bin/sh\necho provider\n"), Method: zip.Store},
		{Name: "LICENSE", Body: semiCompressible(100_000, 1), Method: zip.Deflate},
	},
	"directories": {
		{Name: "docs/", Method: zip.Store},
		{Name: "docs/readme.md", Body: []byte("# foo\n"), Method: zip.Deflate},
		{Name: "empty", Method: zip.Deflate},
		{Name: "z/", Method: zip.Deflate, Descriptor: true},
	},
	"data descriptors": {
		{Name: "a", Body: semiCompressible(70_000, 2), Method: zip.Deflate, Descriptor: true},
		{Name: "b", Body: []byte("no signature"), Method: zip.Deflate, Descriptor: true, NoSig: true},
		{Name: "c", Body: semiCompressible(5000, 3), Method: zip.Deflate, Level: flate.HuffmanOnly, Descriptor: true},
		{Name: "d", Body: semiCompressible(5000, 4), Method: zip.Deflate, Level: flate.NoCompression},
	},
	"utf-8 names": {{Name: "docs/é.md", Body: []byte("x"), Method: zip.Deflate, Flags: 1 << 11}},
	"no entries":  {},
}

func TestStreamMatchesDirhash(t *testing.T) {
	cases := map[string][]byte{}
	for name, entries := range followable {
		cases[name] = rawZip(t, entries...)
	}
	// archive/zip's writer, as goreleaser uses it: data descriptors.
	cases["archive/zip"] = zipbuild.Bytes(t, dirEntries...)
	cases["large"] = zipbuild.Bytes(t, zipbuild.File("terraform-provider-big", string(semiCompressible(3<<20, 5))), zipbuild.File("README", "r"))
	for name, data := range cases {
		for _, chunk := range []int{1, 7, 4096, 0} {
			if chunk < 100 && len(data) > 1<<20 {
				continue
			}
			res := stream(data, chunk, DefaultZipLimits, StreamOptions{})
			if !res.Complete {
				t.Fatalf("%s in chunks of %d: gave up: %s", name, chunk, res.Reason)
			}
			if !checkStreamed(t, data, DefaultZipLimits, res) {
				t.Fatalf("%s in chunks of %d: the streamed hashes were not used: %s", name, chunk, res.Mismatch)
			}
		}
	}
}

// Whatever the stream cannot follow, or that disagrees with the central
// directory, is hashed from the file, with the same result as dirhash.
func TestStreamFallsBack(t *testing.T) {
	body := semiCompressible(20_000, 6)
	good := testEntry{Name: "a", Body: body, Method: zip.Deflate}
	b := testEntry{Name: "b", Body: []byte("bbb"), Method: zip.Store}
	tests := map[string]struct {
		data   []byte
		reason string // the stream gives up saying this; "": it follows but disagrees
	}{
		"stored entry with a data descriptor": {rawZip(t, good, testEntry{Name: "s", Body: body, Method: zip.Store, Descriptor: true}), "data descriptor"},
		"another method":                      {rawZip(t, testEntry{Name: "x", Body: body, Method: 99}), "compression method 99"},
		"encrypted":                           {rawZip(t, testEntry{Name: "x", Body: body, Method: zip.Deflate, Flags: 1}), "encrypted"},
		"data before the first entry": {
			append([]byte("MZ self-extracting stub"), rawZip(t, good)...), "no local file header at byte 0"},
		"cut short":                 {rawZip(t, good)[:100], "ends before its central directory"},
		"local name differs":        {rawZip(t, good, testEntry{Name: "b", LocalName: "c", Body: []byte("x"), Method: zip.Store}), ""},
		"local and central order":   {swapCentral(t, rawZip(t, good, b)), ""},
		"an entry the CD skips":     {dropFirstCentral(t, rawZip(t, testEntry{Name: "a", Body: []byte("evil"), Method: zip.Store}, good)), ""},
		"lying data descriptor":     {patchDescriptorSize(t, rawZip(t, testEntry{Name: "a", Body: body, Method: zip.Deflate, Descriptor: true})), "does not describe"},
		"central CRC zero":          {patchCentralCRC(t, rawZip(t, good), 0), ""},
		"central CRC wrong":         {patchCentralCRC(t, rawZip(t, good), 1), ""},
		"stored sizes differ":       {patchLocalUint32(t, rawZip(t, b), 18, 2), "unpacked"},
		"deflate stream too short ": {patchLocalUint32(t, rawZip(t, good), 22, uint32(len(body)-1)), "more than its local header says"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res := stream(tt.data, 3, DefaultZipLimits, StreamOptions{})
			if tt.reason != "" && (res.Complete || !strings.Contains(res.Reason, tt.reason)) {
				t.Fatalf("stream: complete %v, reason %q; want it to give up with %q", res.Complete, res.Reason, tt.reason)
			}
			if checkStreamed(t, tt.data, DefaultZipLimits, res) {
				t.Fatalf("the streamed hashes were used")
			}
		})
	}
}

// centralRecords returns the offsets of the central directory records.
func centralRecords(t testing.TB, data []byte) []int {
	t.Helper()
	end := bytes.LastIndex(data, []byte{0x50, 0x4b, 0x05, 0x06})
	off := int(binary.LittleEndian.Uint32(data[end+16:]))
	var recs []int
	for off < end {
		recs = append(recs, off)
		n := binary.LittleEndian.Uint16(data[off+28:])
		m := binary.LittleEndian.Uint16(data[off+30:])
		k := binary.LittleEndian.Uint16(data[off+32:])
		off += 46 + int(n) + int(m) + int(k)
	}
	return recs
}

// swapCentral swaps the first two central directory records.
func swapCentral(t testing.TB, data []byte) []byte {
	recs := centralRecords(t, data)
	end := bytes.LastIndex(data, []byte{0x50, 0x4b, 0x05, 0x06})
	out := append([]byte{}, data[:recs[0]]...)
	out = append(out, data[recs[1]:end]...)
	out = append(out, data[recs[0]:recs[1]]...)
	return append(out, data[end:]...)
}

// dropFirstCentral removes the first central directory record.
func dropFirstCentral(t testing.TB, data []byte) []byte {
	recs := centralRecords(t, data)
	end := bytes.LastIndex(data, []byte{0x50, 0x4b, 0x05, 0x06})
	out := append([]byte{}, data[:recs[0]]...)
	out = append(out, data[recs[1]:]...)
	e := len(out) - 22
	binary.LittleEndian.PutUint16(out[e+8:], 1)
	binary.LittleEndian.PutUint16(out[e+10:], 1)
	binary.LittleEndian.PutUint32(out[e+12:], uint32(end-recs[1]))
	return out
}

func patchCentralCRC(t testing.TB, data []byte, crc uint32) []byte {
	recs := centralRecords(t, data)
	out := append([]byte{}, data...)
	binary.LittleEndian.PutUint32(out[recs[0]+16:], crc)
	return out
}

// patchLocalUint32 sets a field of the first local header.
func patchLocalUint32(t testing.TB, data []byte, at int, v uint32) []byte {
	out := append([]byte{}, data...)
	binary.LittleEndian.PutUint32(out[at:], v)
	return out
}

// patchDescriptorSize makes the first data descriptor's uncompressed size
// one more than it is.
func patchDescriptorSize(t testing.TB, data []byte) []byte {
	out := append([]byte{}, data...)
	i := bytes.Index(out, []byte{0x50, 0x4b, 0x07, 0x08})
	binary.LittleEndian.PutUint32(out[i+12:], binary.LittleEndian.Uint32(out[i+12:])+1)
	return out
}

// A hostile archive: its local headers say one thing, its central
// directory another. The streamed entries are never used, and the hashes
// are those of what archive/zip reads.
func TestStreamHostileHeaders(t *testing.T) {
	evil := rawZip(t,
		testEntry{Name: "terraform-provider-foo", Body: []byte("evil"), Method: zip.Store},
		testEntry{Name: "terraform-provider-foo", Body: []byte("good"), Method: zip.Store})
	// The central directory lists only the second.
	data := dropFirstCentral(t, evil)
	res := stream(data, 1, DefaultZipLimits, StreamOptions{})
	if !res.Complete || len(res.Entries) != 2 {
		t.Fatalf("stream: %+v", res)
	}
	if checkStreamed(t, data, DefaultZipLimits, res) {
		t.Fatal("the streamed hashes were used")
	}
	// A central directory whose second record points at the first local
	// header, whose content then fails its CRC-32 (same size): refused,
	// streamed or not.
	two := rawZip(t,
		testEntry{Name: "a", Body: []byte("first"), Method: zip.Store},
		testEntry{Name: "b", Body: []byte("other"), Method: zip.Store})
	recs := centralRecords(t, two)
	binary.LittleEndian.PutUint32(two[recs[1]+42:], 0)
	res = stream(two, 5, DefaultZipLimits, StreamOptions{})
	if !res.Complete {
		t.Fatalf("stream: %+v", res)
	}
	if checkStreamed(t, two, DefaultZipLimits, res) {
		t.Fatal("the streamed hashes were used")
	}
}

func TestStreamReset(t *testing.T) {
	data := rawZip(t, followable["stored and deflated"]...)
	other := zipbuild.Bytes(t, zipbuild.File("x", string(semiCompressible(50_000, 9))))
	for _, cut := range []int{0, 1, 30, 100, len(other) / 2, len(other)} {
		s := NewStreamHasher(DefaultZipLimits, StreamOptions{Buffer: 1000})
		feed(s, other[:cut], 13)
		s.Reset()
		feed(s, data, 13)
		res := s.Close()
		if !res.Complete || !checkStreamed(t, data, DefaultZipLimits, res) {
			t.Fatalf("reset after %d bytes: %+v", cut, res)
		}
	}
	// Bytes after a Reset are the archive's; the ones before are forgotten,
	// even a whole other archive.
	s := NewStreamHasher(DefaultZipLimits, StreamOptions{})
	feed(s, data, 0)
	s.Reset()
	feed(s, other, 0)
	if res := s.Close(); !checkStreamed(t, other, DefaultZipLimits, res) {
		t.Fatalf("after a reset: %+v", res)
	}
}

func TestStreamAbandon(t *testing.T) {
	data := rawZip(t, followable["data descriptors"]...)
	s := NewStreamHasher(DefaultZipLimits, StreamOptions{})
	feed(s, data[:len(data)/2], 0)
	s.Abandon("resumed a partial download")
	s.Reset()
	feed(s, data, 0)
	res := s.Close()
	if res.Complete || res.Reason != "resumed a partial download" {
		t.Fatalf("after Abandon: %+v", res)
	}
	if checkStreamed(t, data, DefaultZipLimits, res) {
		t.Fatal("the streamed hashes were used")
	}
	// Writes after Close are ignored, and nothing written is a result too.
	if n, err := s.Write([]byte("more")); n != 4 || err != nil {
		t.Fatalf("Write after Close = %d, %v", n, err)
	}
	if res := NewStreamHasher(DefaultZipLimits, StreamOptions{}).Close(); res.Complete {
		t.Fatalf("nothing written: %+v", res)
	}
}

func TestStreamLimits(t *testing.T) {
	entries := []testEntry{
		{Name: "a", Body: semiCompressible(10_000, 1), Method: zip.Deflate},
		{Name: "b", Body: semiCompressible(10_000, 2), Method: zip.Deflate, Descriptor: true},
		{Name: "c", Body: semiCompressible(10_000, 3), Method: zip.Store},
	}
	data := rawZip(t, entries...)
	tests := map[string]struct {
		limits ZipLimits
		reason string
	}{
		"exactly the limits":                 {ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 30_000}, ""},
		"too many entries":                   {ZipLimits{MaxEntries: 2, MaxUnpackedBytes: 1 << 20}, "more than the limit of 2 entries"},
		"too large":                          {ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 29_999}, "more than the limit of 29999 bytes"},
		"too large, first":                   {ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 9_999}, "more than the limit of 9999 bytes"},
		"too large, in the descriptor entry": {ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 15_000}, "more than the limit of 15000 bytes"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res := stream(data, 100, tt.limits, StreamOptions{})
			if tt.reason == "" {
				if !res.Complete {
					t.Fatalf("gave up: %s", res.Reason)
				}
			} else if res.Complete || !strings.Contains(res.Reason, tt.reason) {
				t.Fatalf("complete %v, reason %q, want %q", res.Complete, res.Reason, tt.reason)
			}
			checkStreamed(t, data, tt.limits, res)
		})
	}
	// A bomb behind a data descriptor: the stream stops at the limit
	// instead of inflating it all.
	bomb := rawZip(t, testEntry{Name: "bomb", Body: make([]byte, 8<<20), Method: zip.Deflate, Descriptor: true})
	res := stream(bomb, 0, ZipLimits{MaxEntries: 1, MaxUnpackedBytes: 1 << 20}, StreamOptions{})
	if res.Complete || !strings.Contains(res.Reason, "limit") {
		t.Fatalf("bomb: %+v", res)
	}
}

// The parser holds a slot only while it works, and gives it back.
func TestStreamSlots(t *testing.T) {
	data := rawZip(t, followable["data descriptors"]...)
	sem := make(chan struct{}, 1)
	var acquired, held atomic.Int64
	opts := StreamOptions{
		Buffer:  512,
		Acquire: func() error { sem <- struct{}{}; acquired.Add(1); held.Add(1); return nil },
		Release: func() { held.Add(-1); <-sem },
	}
	s := NewStreamHasher(DefaultZipLimits, opts)
	feed(s, data, 100)
	res := s.Close()
	if !res.Complete || acquired.Load() == 0 || held.Load() != 0 || len(sem) != 0 {
		t.Fatalf("complete %v (%s), acquired %d, held %d", res.Complete, res.Reason, acquired.Load(), held.Load())
	}
	// Another holds the only slot: the parser waits, the writes wait for
	// it once the buffer is full, and it all goes on once the slot is free.
	sem <- struct{}{}
	done := make(chan *StreamResult)
	go func() { done <- stream(data, 100, DefaultZipLimits, opts) }()
	select {
	case res := <-done:
		t.Fatalf("finished without a slot: %+v", res)
	default:
	}
	<-sem
	if res := <-done; !res.Complete {
		t.Fatalf("gave up: %s", res.Reason)
	}
	// An Acquire that fails makes it give up; the writes do not wait.
	opts.Acquire = func() error { return errors.New("build cancelled") }
	res = stream(data, 10, DefaultZipLimits, opts)
	if res.Complete || res.Reason != "build cancelled" {
		t.Fatalf("failed Acquire: %+v", res)
	}
}

// Once the parser has given up or reached the central directory, writes
// are dropped rather than buffered or waited on.
func TestStreamDropsWhatItDoesNotNeed(t *testing.T) {
	s := NewStreamHasher(DefaultZipLimits, StreamOptions{Buffer: 16})
	feed(s, []byte("not a zip at all"), 0)
	feed(s, make([]byte, 8<<20), 1000) // would block forever if buffered
	if res := s.Close(); res.Complete || !strings.Contains(res.Reason, "no local file header") {
		t.Fatalf("%+v", res)
	}
}

func TestFastInflateMatchesFlate(t *testing.T) {
	body := semiCompressible(100_000, 7)
	for _, level := range []int{flate.NoCompression, flate.BestSpeed, flate.DefaultCompression, flate.BestCompression, flate.HuffmanOnly} {
		var buf bytes.Buffer
		fw, _ := flate.NewWriter(&buf, level)
		_, _ = fw.Write(body)
		_ = fw.Close()
		got, err := io.ReadAll(newInflateReader(bytes.NewReader(buf.Bytes())))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("level %d: %d bytes, %v", level, len(got), err)
		}
		// Cut short anywhere: an error, as compress/flate gives.
		for cut := range min(buf.Len(), 2000) {
			if _, err := io.ReadAll(newInflateReader(bytes.NewReader(buf.Bytes()[:cut]))); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("level %d cut at %d: %v, want io.ErrUnexpectedEOF", level, cut, err)
			}
		}
	}
}

// benchArchive returns a zip like a provider's: one large executable,
// semi-compressible, deflated, written by archive/zip. With
// TFMIRROR_BENCH_ZIP set, that file instead.
func benchArchive(b *testing.B) (string, []byte) {
	b.Helper()
	if path := os.Getenv("TFMIRROR_BENCH_ZIP"); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		return path, data
	}
	data := zipbuild.Bytes(b, zipbuild.File("terraform-provider-bench_v1.0.0", string(semiCompressible(32<<20, 11))),
		zipbuild.File("LICENSE", "MPL-2.0\n"), zipbuild.File("README.md", "bench\n"))
	return writeTemp(b, data), data
}

// Inflating and hashing every entry of an archive: archive/zip's decoder
// (as dirhash uses) against the one HashArchive registers.
func BenchmarkInflate(b *testing.B) {
	path, data := benchArchive(b)
	for _, tt := range []struct {
		name string
		fast bool
	}{{"std", false}, {"fast", true}} {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				zr, err := zip.OpenReader(path)
				if err != nil {
					b.Fatal(err)
				}
				if tt.fast {
					useFastInflate(&zr.Reader)
				}
				if _, _, err := hashEntries(zr.File); err != nil {
					b.Fatal(err)
				}
				_ = zr.Close()
			}
		})
	}
}

// Every hash of an archive: dirhash.HashZip, HashArchive from the file,
// and HashArchiveStreamed after a StreamHasher was fed the bytes (the
// streaming included, in 32 KiB writes as a download makes).
func BenchmarkHashArchive(b *testing.B) {
	path, data := benchArchive(b)
	sum := sha256.Sum256(data)
	b.Run("dirhash", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := dirhash.HashZip(path, dirhash.Hash1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("file", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := HashArchive(path, sum, DefaultZipLimits); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("streamed", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			res := stream(data, 32<<10, DefaultZipLimits, StreamOptions{})
			if _, err := HashArchiveStreamed(path, sum, DefaultZipLimits, res); err != nil || !res.Summarized {
				b.Fatal(err, res.Reason, res.Mismatch)
			}
		}
	})
	b.Run("summarize", func(b *testing.B) { // what is left once the download ends
		res := stream(data, 32<<10, DefaultZipLimits, StreamOptions{})
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := HashArchiveStreamed(path, sum, DefaultZipLimits, res); err != nil || !res.Summarized {
				b.Fatal(err)
			}
		}
	})
}

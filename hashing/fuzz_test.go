package hashing

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/dirhash"
)

// FuzzParseSums checks that ParseSums never panics and that whatever it
// accepts survives a round trip through the canonical sha256sum(1) form.
func FuzzParseSums(f *testing.F) {
	f.Add([]byte(hexA + "  a.zip\n" + hexB + "  b.zip\n"))
	f.Add([]byte(hexA + "  a.zip"))
	f.Add([]byte(hexA + "  a.zip\r\n"))
	f.Add([]byte(hexA + " *a.zip\n\n"))
	f.Add([]byte(strings.ToUpper(hexC) + "\tc.zip\n"))
	f.Add([]byte(hexA + "  a.zip\n" + hexA + "  a.zip\n"))
	f.Add([]byte(""))
	f.Add([]byte("\n"))
	f.Add([]byte(hexA[:63] + "  a.zip\n"))
	f.Add([]byte(hexA + "  a b\n"))
	f.Add([]byte(hexA + "  \u00a0a.zip\u0085\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		sums, err := ParseSums(doc)
		if err != nil {
			if sums != nil {
				t.Fatalf("ParseSums returned %v with error %v", sums, err)
			}
			return
		}
		if len(sums) == 0 {
			t.Fatalf("ParseSums(%q) succeeded with no entries", doc)
		}
		var buf bytes.Buffer
		for name, sum := range sums {
			if name == "" {
				t.Fatalf("ParseSums(%q) returned an empty name", doc)
			}
			buf.WriteString(hex.EncodeToString(sum[:]) + "  " + name + "\n")
		}
		again, err := ParseSums(buf.Bytes())
		if err != nil {
			t.Fatalf("re-parsing %q (from %q): %v", buf.Bytes(), doc, err)
		}
		if diff := cmp.Diff(sums, again); diff != "" {
			t.Fatalf("round trip of %q changed the sums (-first +second):\n%s", doc, diff)
		}
		if got := sums.ZHashes(); len(got) != len(sums) {
			t.Fatalf("ZHashes returned %d hashes for %d entries", len(got), len(sums))
		}
	})
}

// FuzzParseHex checks that ParseHex never panics and accepts exactly the
// 64-digit hex strings.
func FuzzParseHex(f *testing.F) {
	f.Add(hexA)
	f.Add(strings.ToUpper(hexB))
	f.Add("")
	f.Add(hexA[:63] + "g")
	f.Fuzz(func(t *testing.T, s string) {
		sum, err := ParseHex(s)
		decoded, derr := hex.DecodeString(s)
		valid := derr == nil && len(decoded) == len(sum)
		if valid != (err == nil) {
			t.Fatalf("ParseHex(%q) error = %v, but hex.DecodeString says valid=%v", s, err, valid)
		}
		if valid && !bytes.Equal(sum[:], decoded) {
			t.Fatalf("ParseHex(%q) = %x, want %x", s, sum, decoded)
		}
	})
}

// FuzzStreamH1 builds zips from its input (entries with names, contents,
// methods and data descriptors, then raw byte changes anywhere), streams
// them in chunks of random sizes, and holds every way of hashing them to
// dirhash.HashZip: whenever the streamed path or HashArchive (with its
// fast decoder) gives a hash, it is dirhash's; they refuse the same
// archives; and an archive left as built is followed by the stream.
func FuzzStreamH1(f *testing.F) {
	f.Add("terraform-provider-foo\x00LICENSE", []byte("#!/bin/sh\necho provider\nMPL-2.0 MPL-2.0 MPL-2.0"), uint8(0b10), uint8(0), []byte{}, uint64(1))
	f.Add("docs/\x00docs/a\x00bin", []byte("content content content"), uint8(0b110), uint8(0b100), []byte{}, uint64(2))
	f.Add("a\x00b\x00c", []byte("xyzzy xyzzy xyzzy xyzzy"), uint8(0b111), uint8(0b111), []byte{}, uint64(3))
	f.Add("a\x00b", []byte("stored with a descriptor"), uint8(0b00), uint8(0b01), []byte{}, uint64(4))
	f.Add("a\x00b", []byte("no signature on the descriptor"), uint8(0b11), uint8(0b10010), []byte{}, uint64(5))
	f.Add("a\x00b", []byte("mutated mutated mutated"), uint8(0b11), uint8(0), []byte{0, 40, 'X', 1, 2, 0}, uint64(6))
	f.Add("a", []byte("a local header that lies"), uint8(1), uint8(1), []byte{0, 26, 2, 0, 30, 'b'}, uint64(7))
	f.Add("x", []byte{}, uint8(0), uint8(0), []byte{0, 0, 0}, uint64(8))
	f.Fuzz(func(t *testing.T, names string, content []byte, deflated, descriptors uint8, mutations []byte, seed uint64) {
		list := strings.Split(names, "\x00")
		if len(list) > 8 || len(names) > 1000 || len(content) > 1<<16 || len(mutations) > 64 {
			return
		}
		var entries []testEntry
		followed := true
		for i, name := range list {
			e := testEntry{Name: name, Method: zip.Store}
			if !strings.HasSuffix(name, "/") {
				// Each entry gets its own part of content, repeated a
				// few times to give deflate matches to make.
				part := content[i*len(content)/len(list) : (i+1)*len(content)/len(list)]
				e.Body = bytes.Repeat(part, 1+i%3)
			}
			if deflated&(1<<i) != 0 {
				e.Method = zip.Deflate
				e.Level = []int{flate.DefaultCompression, flate.NoCompression, flate.BestSpeed, flate.HuffmanOnly}[(int(seed)+i)%4]
			}
			if descriptors&(1<<i) != 0 {
				e.Descriptor = true
				e.NoSig = descriptors&(1<<(4+i%4)) != 0
				if e.Method == zip.Store {
					followed = false
				}
			}
			entries = append(entries, e)
		}
		data := rawZip(t, entries...)
		// Each mutation is (offset high, offset low, byte).
		for i := 0; i+2 < len(mutations) && len(data) > 0; i += 3 {
			at := int(binary.BigEndian.Uint16(mutations[i:])) % len(data)
			data[at] = mutations[i+2]
			followed = false
		}

		rng := rand.New(rand.NewPCG(seed, seed>>32))
		s := NewStreamHasher(DefaultZipLimits, StreamOptions{Buffer: 1 + rng.IntN(4096)})
		for rest := data; len(rest) > 0; {
			n := min(1+rng.IntN(1+rng.IntN(8192)), len(rest))
			_, _ = s.Write(rest[:n])
			rest = rest[n:]
		}
		res := s.Close()

		path := writeTemp(t, data)
		sum := sha256.Sum256(data)
		streamed, serr := HashArchiveStreamed(path, sum, DefaultZipLimits, res)
		file, ferr := HashArchive(path, sum, DefaultZipLimits)
		ref, rerr := dirhash.HashZip(path, dirhash.Hash1)
		if (serr == nil) != (ferr == nil) || streamed != file {
			t.Fatalf("streamed: %v, %v (%+v); from the file: %v, %v", streamed, serr, res, file, ferr)
		}
		if ferr == nil && (rerr != nil || string(file.H1) != ref) {
			t.Fatalf("HashArchive H1 = %s, dirhash.HashZip = %s, %v (summarized from the stream: %v)", file.H1, ref, rerr, res.Summarized)
		}
		if followed && serr == nil && !res.Summarized {
			t.Fatalf("an archive as built was not followed: %s %s", res.Reason, res.Mismatch)
		}
	})
}

// FuzzFastInflate holds the Deflate decoder HashArchive uses to
// compress/flate, archive/zip's own: the same output, and an error for
// exactly the same streams.
func FuzzFastInflate(f *testing.F) {
	for _, level := range []int{flate.NoCompression, flate.BestSpeed, flate.DefaultCompression, flate.HuffmanOnly} {
		var buf bytes.Buffer
		fw, _ := flate.NewWriter(&buf, level)
		_, _ = fw.Write(bytes.Repeat([]byte("provider resource schema 0123456789 "), 40))
		_ = fw.Close()
		f.Add(buf.Bytes())
		f.Add(buf.Bytes()[:buf.Len()/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0x03, 0x00})
	f.Add([]byte("2A0")) // ends inside a length's extra bits: io.EOF, not the end
	f.Fuzz(func(t *testing.T, data []byte) {
		// Not a ByteReader, as archive/zip's section readers are not.
		want, werr := io.ReadAll(flate.NewReader(struct{ io.Reader }{bytes.NewReader(data)}))
		got, gerr := io.ReadAll(newInflateReader(struct{ io.Reader }{bytes.NewReader(data)}))
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("compress/flate: %v; fast decoder: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("compress/flate gave %d bytes, the fast decoder %d different ones", len(want), len(got))
		}
	})
}

package hashing

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

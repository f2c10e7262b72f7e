package layout

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecodeIndex checks that DecodeIndex never panics and that whatever
// it accepts re-encodes to a document that decodes to the same index.
func FuzzDecodeIndex(f *testing.F) {
	for _, seed := range []string{
		wantIndexDoc,
		`{"versions":{}}`,
		`{"versions":{"1.0.0":null}}`,
		`{"versions":{"1.0.0":{"x":1}}}`,
		`{"versions":{}}]`,
		`{"versions":{}} {}`,
		`{"VERSIONS":{"a&b":{}}}`,
		`[]`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := DecodeIndex(data)
		if err != nil {
			return
		}
		if idx.Versions == nil {
			t.Fatalf("DecodeIndex(%q) succeeded with nil versions", data)
		}
		enc, err := Encode(idx)
		if err != nil {
			t.Fatalf("Encode(%v): %v", idx, err)
		}
		again, err := DecodeIndex(enc)
		if err != nil {
			t.Fatalf("DecodeIndex(Encode(%v)) = %v; encoded %q", idx, err, enc)
		}
		if diff := cmp.Diff(idx, again); diff != "" {
			t.Fatalf("round trip of %q changed the index (-first +second):\n%s", data, diff)
		}
	})
}

// FuzzDecodeVersion checks that DecodeVersion never panics, that every
// archive it accepts has a url, and that its result survives a round trip.
func FuzzDecodeVersion(f *testing.F) {
	for _, seed := range []string{
		wantVersionDoc,
		`{"archives":{}}`,
		`{"archives":{"linux_amd64":{"url":"a.zip"}}}`,
		`{"archives":{"linux_amd64":{"hashes":[],"url":"a.zip"}}}`,
		`{"archives":{"linux_amd64":{"hashes":["h1:x"]}}}`,
		`{"archives":{"linux_amd64":null}}`,
		`{"archives":{"a&b":{"url":"<x>"}}}]`,
		`{"archives":{}} x`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := DecodeVersion(data)
		if err != nil {
			return
		}
		if doc.Archives == nil {
			t.Fatalf("DecodeVersion(%q) succeeded with nil archives", data)
		}
		for plat, a := range doc.Archives {
			if a.URL == "" {
				t.Fatalf("DecodeVersion(%q) accepted archive %q without a url", data, plat)
			}
		}
		enc, err := Encode(doc)
		if err != nil {
			t.Fatalf("Encode(%v): %v", doc, err)
		}
		again, err := DecodeVersion(enc)
		if err != nil {
			t.Fatalf("DecodeVersion(Encode(%v)) = %v; encoded %q", doc, err, enc)
		}
		// An empty "hashes" list is omitted when encoding.
		if diff := cmp.Diff(doc, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip of %q changed the document (-first +second):\n%s", data, diff)
		}
	})
}

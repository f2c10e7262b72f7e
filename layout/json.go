package layout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// Index is the content of a provider's index.json.
type Index struct {
	Versions map[string]struct{} `json:"versions"`
}

// versions parses the index's version keys.
func (idx Index) versions() (addrs.VersionList, error) {
	var out addrs.VersionList
	for raw := range idx.Versions {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", excerpt.Quote(raw), err)
		}
		out = append(out, v)
	}
	out.Sort()
	return out, nil
}

// VersionDoc is the content of a <version>.json file.
type VersionDoc struct {
	Archives map[string]ArchiveEntry `json:"archives"`
}

// ArchiveEntry describes one platform's archive in a <version>.json file.
type ArchiveEntry struct {
	Hashes []hashing.Hash `json:"hashes,omitempty"`
	URL    string         `json:"url"`
}

// Encode renders v exactly as OpenTofu's own mirror command does: two-space
// indentation, keys sorted, HTML characters escaped, no trailing newline.
func Encode(v any) ([]byte, error) {
	return json.MarshalIndent(v, "", "  ")
}

// Bounds on what one document lists besides its size (MaxDocumentBytes),
// checked before it is decoded, so that no document makes a reader hold
// more than a real mirror ever writes, however it packs its bytes:
// MaxVersions versions in a provider's or module's index.json (the
// providers with the most releases have about 1,000), MaxPlatforms
// archives in a <version>.json (a release is built for about 20).
const (
	MaxVersions  = 100_000
	MaxPlatforms = 1_000
)

// ErrTooMany means a document lists more than a bound allows.
var ErrTooMany = errors.New("the document lists more than tfmirror reads")

// DecodeIndex parses index.json, rejecting anything but the expected
// shape and more than MaxVersions versions.
func DecodeIndex(data []byte) (Index, error) {
	if err := checkMembers(data, "versions", MaxVersions); err != nil {
		return Index{}, fmt.Errorf("parse index.json: %w", err)
	}
	var idx Index
	if err := decodeStrict(data, &idx); err != nil {
		return Index{}, fmt.Errorf("parse index.json: %w", err)
	}
	if idx.Versions == nil {
		return Index{}, fmt.Errorf("parse index.json: no \"versions\" object")
	}
	return idx, nil
}

// DecodeVersion parses a <version>.json file, rejecting anything but the
// expected shape and more than MaxPlatforms archives.
func DecodeVersion(data []byte) (VersionDoc, error) {
	if err := checkMembers(data, "archives", MaxPlatforms); err != nil {
		return VersionDoc{}, fmt.Errorf("parse version document: %w", err)
	}
	var doc VersionDoc
	if err := decodeStrict(data, &doc); err != nil {
		return VersionDoc{}, fmt.Errorf("parse version document: %w", err)
	}
	if doc.Archives == nil {
		return VersionDoc{}, fmt.Errorf("parse version document: no \"archives\" object")
	}
	for plat, a := range doc.Archives {
		if a.URL == "" {
			return VersionDoc{}, fmt.Errorf("parse version document: archive %s has no url", plat)
		}
	}
	return doc, nil
}

// decodeStrict decodes a whole document into v, refusing unknown fields
// and trailing data. A decoder's complaint, which may quote the document,
// is quoted bounded and escaped (excerpt.Error).
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return excerpt.Error(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

// sortedHashes returns a sorted copy without duplicates.
func sortedHashes(hs []hashing.Hash) []hashing.Hash {
	out := slices.Clone(hs)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkMembers refuses a document whose object under the top-level key
// has more than limit members (counted over every occurrence of the key),
// scanning its bytes once and keeping nothing: a check before the
// document is decoded. What is not JSON is left for the decoder to
// refuse.
func checkMembers(data []byte, key string, limit int) error {
	var (
		depth    int
		inString bool
		start    int    // of the string being read
		last     []byte // the last string read at depth 1 (a key, if ':' follows)
		armed    bool   // key's ':' was read: an object that opens now is counted
		counting bool   // inside key's object, whose interior is at depth in
		in       int
		members  int
		empty    bool // no member seen yet in the object being counted
	)
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
				if depth == 1 && !counting {
					last = data[start:i]
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString, start = true, i+1
		case ':':
			armed = depth == 1 && keyIs(last, key)
			continue
		case '{', '[':
			depth++
			if armed && c == '{' {
				counting, in, empty = true, depth, true
			}
		case '}', ']':
			if counting && depth == in {
				counting = false
			}
			depth--
		case ',':
			if counting && depth == in {
				empty = true
			}
		}
		armed = false
		if counting && depth == in && c == '"' && empty {
			// A member's key begins.
			empty = false
			members++
			if members > limit {
				return fmt.Errorf("%w: more than %d members in %q", ErrTooMany, limit, key)
			}
		}
	}
	return nil
}

// keyIs reports whether raw, a JSON string's bytes between its quotes,
// is key.
func keyIs(raw []byte, key string) bool {
	if !bytes.ContainsRune(raw, '\\') {
		return string(raw) == key
	}
	var s string
	return json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s) == nil && s == key
}

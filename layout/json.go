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
			return nil, fmt.Errorf("version %q: %w", raw, err)
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

// DecodeIndex parses index.json, rejecting anything but the expected shape.
func DecodeIndex(data []byte) (Index, error) {
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
// expected shape.
func DecodeVersion(data []byte) (VersionDoc, error) {
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

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
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

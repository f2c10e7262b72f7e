package fakeregistry

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"testing"
	"time"
)

// modified is the fixed modification time of every zip entry.
var modified = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// manifest is the content of every version's manifest file.
const manifest = `{"version":1,"metadata":{"protocol_versions":["5.0"]}}`

// paddingSize is how many filler bytes each provider binary gets.
const paddingSize = 4096

// zipEntry is one file or directory of an archive.
type zipEntry struct {
	name string
	mode fs.FileMode
	body []byte
}

// buildArchive returns the deterministic zip of one provider package.
func buildArchive(t testing.TB, namespace, typ, version, platform string, dirEntries bool) []byte {
	t.Helper()
	entries := []zipEntry{{
		name: "terraform-provider-" + typ + "_v" + version,
		mode: 0o755,
		body: binaryContent(namespace, typ, version, platform),
	}}
	if dirEntries {
		entries = append(entries,
			zipEntry{name: "docs/", mode: fs.ModeDir | 0o755},
			zipEntry{name: "docs/README.md", mode: 0o644, body: []byte("# " + namespace + "/" + typ + "\n")},
		)
	}
	data, err := writeZip(entries)
	if err != nil {
		t.Fatalf("fakeregistry: build archive: %v", err)
	}
	return data
}

// writeZip writes entries in order with fixed metadata.
func writeZip(entries []zipEntry) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		if err := writeEntry(zw, e); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeEntry(zw *zip.Writer, e zipEntry) error {
	h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: modified}
	if e.mode.IsDir() {
		h.Method = zip.Store
	}
	h.SetMode(e.mode)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = w.Write(e.body)
	return err
}

// binaryContent is the fake provider binary: a line naming the package,
// then filler derived from that name so every archive differs.
func binaryContent(namespace, typ, version, platform string) []byte {
	head := fmt.Sprintf("#!/bin/sh\n# fake provider %s/%s %s %s\n", namespace, typ, version, platform)
	return append([]byte(head), padding(head, paddingSize)...)
}

// padding returns n pseudo-random but deterministic bytes seeded from seed:
// hex lines of a SHA-256 chain, so they still compress somewhat.
func padding(seed string, n int) []byte {
	var out []byte
	sum := sha256.Sum256([]byte(seed))
	for len(out) < n {
		out = append(out, hex.EncodeToString(sum[:])...)
		out = append(out, '\n')
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

// shasums returns the SHA256SUMS document of a version: one line per
// platform zip plus the manifest, sorted by filename.
func shasums(typ, version string, archives map[string][]byte) []byte {
	return shasumsNamed(typ, version, archives, func(platform string) string {
		return zipName(typ, version, platform)
	})
}

// shasumsNamed is shasums with the zip of each platform listed as name(platform).
func shasumsNamed(typ, version string, archives map[string][]byte, name func(platform string) string) []byte {
	files := map[string][]byte{manifestName(typ, version): []byte(manifest)}
	for p, data := range archives {
		files[name(p)] = data
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, name := range names {
		fmt.Fprintf(&buf, "%s  %s\n", sha256Hex(files[name]), name)
	}
	return buf.Bytes()
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// fileBase is the common prefix of a version's release files.
func fileBase(typ, version string) string {
	return "terraform-provider-" + typ + "_" + version
}

func zipName(typ, version, platform string) string {
	return fileBase(typ, version) + "_" + platform + ".zip"
}

func manifestName(typ, version string) string {
	return fileBase(typ, version) + "_manifest.json"
}

func sumsName(typ, version string) string {
	return fileBase(typ, version) + "_SHA256SUMS"
}

func sigName(typ, version string) string {
	return sumsName(typ, version) + ".sig"
}

// tamper returns a copy of data with its middle byte flipped.
func tamper(data []byte) []byte {
	out := bytes.Clone(data)
	if len(out) > 0 {
		out[len(out)/2] ^= 0xff
	}
	return out
}

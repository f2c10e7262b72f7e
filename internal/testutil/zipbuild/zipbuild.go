// Package zipbuild writes zip archives entry by entry, as hostile or as
// ordinary as a test needs: duplicates, escaping names, links, pipes and
// directories with content are written as given. Test use only.
package zipbuild

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Entry is one entry of an archive, written in order.
type Entry struct {
	Name string
	// Body is the entry's content. It is not written for a name ending in
	// "/" (archive/zip writes no content there), but it is for a directory
	// given by Mode alone.
	Body string
	// Mode is set on the header. Zero is a plain 0644 file, or a 0755
	// directory when Name ends in "/".
	Mode fs.FileMode
}

// File is a plain file entry (or a directory entry, if name ends in "/").
func File(name, body string) Entry { return Entry{Name: name, Body: body} }

// Bytes returns entries, deflated, as a zip.
func Bytes(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		switch {
		case e.Mode != 0:
			h.SetMode(e.Mode)
		case strings.HasSuffix(e.Name, "/"):
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name, "/") {
			continue
		}
		if _, err := w.Write([]byte(e.Body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Write writes entries as a zip to a fresh temporary directory and returns
// its path and SHA-256.
func Write(t testing.TB, entries ...Entry) (string, [sha256.Size]byte) {
	t.Helper()
	data := Bytes(t, entries...)
	path := filepath.Join(t.TempDir(), "pkg.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sha256.Sum256(data)
}

// Bomb returns a zip whose one file, name, deflates size zero bytes (a
// multiple of 1 MiB) into about a thousandth of that: a real zip bomb,
// which archive/zip unpacks to exactly size bytes with a correct CRC-32.
// It is made in milliseconds whatever its size: one MiB of zeros is
// deflated once and its (self-contained, byte-aligned) blocks repeated.
func Bomb(t testing.TB, name string, size int64) []byte {
	t.Helper()
	const chunk = 1 << 20
	if size <= 0 || size%chunk != 0 {
		t.Fatal("zipbuild.Bomb: size must be a positive multiple of 1 MiB")
	}
	zeros := make([]byte, chunk)
	var block bytes.Buffer
	fw, err := flate.NewWriter(&block, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh writer's first symbol is a literal, so the flushed blocks
	// refer to nothing before them, and Flush ends them on a byte.
	if _, err := fw.Write(zeros); err != nil {
		t.Fatal(err)
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	n := size / chunk
	stream := bytes.Repeat(block.Bytes(), int(n))
	stream = append(stream, 0x01, 0x00, 0x00, 0xff, 0xff) // a final, empty stored block
	crc := crc32.NewIEEE()
	for range n {
		_, _ = crc.Write(zeros)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc.Sum32(), CompressedSize64: uint64(len(stream)), UncompressedSize64: uint64(size)}
	h.SetMode(0o644)
	w, err := zw.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(stream); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Package zipbuild writes zip archives entry by entry, as hostile or as
// ordinary as a test needs: duplicates, escaping names, links, pipes and
// directories with content are written as given. Test use only.
package zipbuild

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
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

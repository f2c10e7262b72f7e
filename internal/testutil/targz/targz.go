// Package targz reads and writes .tar.gz files entry by entry, so tests can
// take a bundle apart, tamper with it and put it back together. Test use
// only.
package targz

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"testing"
)

// Entry is one tar entry with its content.
type Entry struct {
	Header tar.Header
	Data   []byte
}

// Regular is a regular file entry.
func Regular(name, content string) Entry {
	return Entry{Header: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content))}, Data: []byte(content)}
}

// Read returns every entry of the .tar.gz file.
func Read(t testing.TB, file string) []Entry {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []Entry
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Entry{Header: *hdr, Data: data})
	}
}

// Pack returns entries as a .tar.gz, with trailing bytes written after the
// tar's end (inside the gzip stream). Regular files get their size from
// their data.
func Pack(t testing.TB, entries []Entry, trailing []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		hdr := e.Header
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.Data))
		}
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := gz.Write(trailing); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Write writes entries as a .tar.gz file.
func Write(t testing.TB, file string, entries []Entry) {
	t.Helper()
	if err := os.WriteFile(file, Pack(t, entries, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Bomb packs entries, then one more entry name of size zero bytes whose
// data decompresses from a few hundred bytes per 64 MiB: the gzip stream
// is made of members, 64 MiB of zeros compressed once and repeated. size
// must be a multiple of 64 MiB. The tar header of every entry gets the
// size of its data.
func Bomb(t testing.TB, entries []Entry, name string, size int64) []byte {
	t.Helper()
	const chunk = 64 << 20
	if size%chunk != 0 {
		t.Fatal("targz.Bomb: size must be a multiple of 64 MiB")
	}
	var head bytes.Buffer
	tw := tar.NewWriter(&head)
	for _, e := range entries {
		hdr := e.Header
		hdr.Size = int64(len(e.Data))
		if err := tw.WriteHeader(&hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	// The bomb's header, written by a writer that is never closed.
	if err := tar.NewWriter(&head).WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	zeros := gzipped(t, make([]byte, chunk))
	out := gzipped(t, head.Bytes())
	for range size / chunk {
		out = append(out, zeros...)
	}
	return append(out, gzipped(t, make([]byte, 1024))...) // the end of the archive
}

func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

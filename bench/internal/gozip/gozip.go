// Package gozip zips files as Go release tools (goreleaser) do: with
// archive/zip, each file deflated at archive/zip's default level (5). It is
// the one place the benchmark makes its archives of real Go executables:
// bench/cmd/gozip (the h1 part's corpus) and benchorigin's "realgo" corpus
// (the G part's provider release) both zip with it.
//
// A file is deflated once into a raw deflate stream on disk (Deflate) and
// then written into any number of zips (Write) with zip.Writer.CreateRaw.
// An entry's compressed bytes are the ones archive/zip's own compressor
// writes for the same file (compress/flate at level 5, one stream per
// entry, closed); only the headers differ (sizes and CRC-32 in the local
// header rather than in a data descriptor after the data). Deflating once
// saves the work when the same executable goes into several zips.
package gozip

import (
	"archive/zip"
	"compress/flate"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"time"
)

// Level is archive/zip's default deflate level, the one goreleaser's zips
// get.
const Level = 5

// Modified is the fixed modification time of every entry, so that the
// same files always make the same zip.
var Modified = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Stream is a file deflated into a raw deflate stream on disk.
type Stream struct {
	Path       string // the raw deflate stream
	CRC32      uint32 // of the uncompressed bytes
	Size       int64  // uncompressed bytes
	Compressed int64  // bytes of the stream
}

// Deflate deflates the file src into a new file dst, as archive/zip
// deflates an entry.
func Deflate(src, dst string) (Stream, error) {
	s := Stream{Path: dst}
	in, err := os.Open(src)
	if err != nil {
		return s, err
	}
	defer func() { _ = in.Close() }() // read only
	out, err := os.Create(dst)
	if err != nil {
		return s, err
	}
	defer func() { _ = out.Close() }() // on errors; closed and checked below otherwise
	cw := &counter{w: out}
	fw, err := flate.NewWriter(cw, Level)
	if err != nil {
		return s, err
	}
	crc := crc32.NewIEEE()
	n, err := io.Copy(io.MultiWriter(fw, crc), in)
	if err != nil {
		return s, err
	}
	if err := fw.Close(); err != nil {
		return s, err
	}
	if err := out.Close(); err != nil {
		return s, err
	}
	s.CRC32, s.Size, s.Compressed = crc.Sum32(), n, cw.n
	return s, nil
}

// Entry is one file of a zip: its name, mode and deflated content.
type Entry struct {
	Name   string
	Mode   fs.FileMode
	Stream Stream
}

// Write writes a zip of entries, in order, to w.
func Write(w io.Writer, entries []Entry) error {
	zw := zip.NewWriter(w)
	for _, e := range entries {
		hdr := &zip.FileHeader{
			Name:               e.Name,
			Method:             zip.Deflate,
			Modified:           Modified,
			CRC32:              e.Stream.CRC32,
			CompressedSize64:   uint64(e.Stream.Compressed),
			UncompressedSize64: uint64(e.Stream.Size),
		}
		// CreateRaw, unlike CreateHeader, does not turn Modified into
		// the MS-DOS date and time the entry carries: they are set here.
		hdr.ModifiedDate = uint16((Modified.Year()-1980)<<9 | int(Modified.Month())<<5 | Modified.Day()) //nolint:staticcheck // see above
		hdr.ModifiedTime = uint16(Modified.Hour()<<11 | Modified.Minute()<<5 | Modified.Second()/2)      //nolint:staticcheck // see above
		hdr.SetMode(e.Mode)
		zf, err := zw.CreateRaw(hdr)
		if err != nil {
			return err
		}
		src, err := os.Open(e.Stream.Path)
		if err != nil {
			return err
		}
		_, err = io.Copy(zf, src)
		_ = src.Close() // read only
		if err != nil {
			return err
		}
	}
	return zw.Close()
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

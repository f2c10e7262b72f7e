// Package chunkio owns how tfmirror copies an archive's bytes from where
// they arrive to where they go: in writes of Chunk bytes rather than one
// write per read. A connection gives one TLS record (16 KiB) per read; a
// write per record costs a download a system call on its staging file and
// a hand-off to the goroutine that hashes it, for every 16 KiB.
//
// It owns the one bound on a copy's size too (CopyLimited): no byte past
// the limit reaches the destination. It does not retry; it imports only
// the standard library, so the core and the adapters that download share
// it.
package chunkio

import (
	"errors"
	"io"
	"sync"
)

// Chunk is how many bytes Copy gathers before each write.
const Chunk = 256 << 10

var buffers = sync.Pool{New: func() any { return new([Chunk]byte) }}

// Copy copies src to dst until src ends, as io.Copy does, but in writes of
// Chunk bytes (the last one shorter). When src fails, what it gave before
// the error is written first, so dst holds every byte read. It returns the
// bytes written and the first error of either side, a failed write (a
// short one included) as a *WriteError; io.EOF from src is not an error.
func Copy(dst io.Writer, src io.Reader) (int64, error) {
	buf := buffers.Get().(*[Chunk]byte)
	defer buffers.Put(buf)
	var written int64
	for {
		n, rerr := fill(buf[:], src)
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			written += int64(w)
			if werr == nil && w < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return written, &WriteError{Err: werr}
			}
		}
		if errors.Is(rerr, io.EOF) {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
}

// ErrPastLimit means the source held more bytes than CopyLimited's limit.
var ErrPastLimit = errors.New("more bytes than the limit")

// NoLimit is CopyLimited's limit for a source of any size.
const NoLimit = -1

// CopyLimited is Copy of a source that must hold at most limit bytes
// (any number with NoLimit, or any negative limit): it never reads past
// the limit, writes what came before it, and fails with ErrPastLimit when
// the source has a byte more.
func CopyLimited(dst io.Writer, src io.Reader, limit int64) (int64, error) {
	if limit < 0 {
		return Copy(dst, src)
	}
	return Copy(dst, LimitReader(src, limit))
}

// LimitReader reads r up to limit bytes and never past them; a read
// after the limit fails with ErrPastLimit if r has a byte more, and gives
// io.EOF if r ends there.
func LimitReader(r io.Reader, limit int64) io.Reader {
	return &limitReader{r: r, left: max(limit, 0)}
}

type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left == 0 {
		var probe [1]byte
		switch n, err := io.ReadFull(l.r, probe[:]); {
		case n > 0:
			return 0, ErrPastLimit
		case errors.Is(err, io.EOF):
			return 0, io.EOF
		default:
			return 0, err
		}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// fill reads src into buf until buf is full or src fails or ends.
func fill(buf []byte, src io.Reader) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// WriteError is a Copy that failed on its writing side: the destination,
// not the source (a full disk, not a connection that broke). It reads as
// the error it holds.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// IsWrite reports whether err is a Copy's failed write.
func IsWrite(err error) bool {
	var w *WriteError
	return errors.As(err, &w)
}

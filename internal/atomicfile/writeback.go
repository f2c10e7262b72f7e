package atomicfile

import "os"

// writebackStep is how many bytes a Writeback lets pile up in the page
// cache before it asks the system to start writing them to disk.
const writebackStep = 8 << 20

// Writeback starts writing a large file's bytes to disk while more are
// still being written to it, so that the fsync that publishes it (SyncClose)
// waits for the last few megabytes rather than for the whole file at once.
// Where the system has no way to start writeback early it does nothing;
// it never makes a file durable on its own.
type Writeback struct {
	file    *os.File
	start   func(f *os.File, off, n int64) error
	written int64 // bytes written to the file so far
	started int64 // bytes whose writeback was asked for
}

// NewWriteback follows writes to f, which starts empty.
func NewWriteback(f *os.File) *Writeback { return &Writeback{file: f, start: startWriteback} }

// Wrote records n more bytes written at the file's end.
func (w *Writeback) Wrote(n int) {
	w.written += int64(n)
	if w.written-w.started < writebackStep {
		return
	}
	_ = w.start(w.file, w.started, w.written-w.started) // if refused, SyncClose flushes it all
	w.started = w.written
}

// Reset follows the file again from empty (after Truncate(0)), or from
// size bytes when it is resumed.
func (w *Writeback) Reset(size int64) { w.written, w.started = size, size }

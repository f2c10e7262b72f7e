//go:build unix

package hostilefs

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// Timeout is how long Within waits for a read to return.
const Timeout = 5 * time.Second

// FIFO makes a named pipe at path, with no writer: opening it for reading
// blocks, unless the reader takes care not to.
func FIFO(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// DevZero makes path a symbolic link to /dev/zero, a file that never ends.
func DevZero(t testing.TB, path string) {
	t.Helper()
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
}

// Sparse makes the file at path, created if need be, size bytes long
// without using disk space: it reads as zeros.
func Sparse(t testing.TB, path string, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// Within runs read and returns what it returns, failing the test if read
// has not returned after Timeout. A read stuck on a named pipe is then
// released: release, the pipe ("" for none), is opened for writing without
// blocking and closed at once, so the reader sees the end of the file and
// its goroutine ends. Call it from the test's goroutine.
func Within[T any](t testing.TB, release string, read func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := read()
		done <- result{v, err}
	}()
	select {
	case res := <-done:
		return res.v, res.err
	case <-time.After(Timeout):
		if release != "" {
			if w, err := os.OpenFile(release, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = w.Close()
			}
		}
		t.Fatalf("the read did not return within %s", Timeout)
		var zero T
		return zero, nil // not reached: t.Fatalf ends the test's goroutine
	}
}

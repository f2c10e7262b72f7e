package atomicfile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Lock excludes a second holder, in this process as in another, until
// it is released; it waits up to its time limit, and stops when the
// context ends. The locked file is never written.
func TestLockExcludesASecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oci-layout")
	const content = `{"imageLayoutVersion":"1.0.0"}`
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	unlock, err := Lock(ctx, path, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Lock(ctx, path, 300*time.Millisecond)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Lock: err = %v, want ErrLocked naming %s", err, path)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("second Lock gave up after %s, before its time limit", waited)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Lock(cancelled, path, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("Lock with a cancelled context: err = %v", err)
	}

	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = unlock()
		close(released)
	}()
	unlock2, err := Lock(ctx, path, 10*time.Second)
	if err != nil {
		t.Fatalf("Lock did not get the lock once it was released: %v", err)
	}
	<-released
	if err := unlock2(); err != nil {
		t.Fatal(err)
	}
	checkContent(t, path, content)
}

// Lock locks an existing regular file only: a missing one is an error,
// and a link is refused, never followed.
func TestLockRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := Lock(t.Context(), filepath.Join(dir, "missing"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Lock of a missing file: %v", err)
	}
	if _, err := Lock(t.Context(), dir, 0); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Lock of a directory: %v", err)
	}
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	if unlock, err := Lock(t.Context(), link, 0); !errors.Is(err, ErrNotRegular) {
		if err == nil {
			_ = unlock()
		}
		t.Errorf("Lock of a link: %v, want a refusal", err)
	}
}

// Root.Lock creates its lock file, writes its holder into it, and a
// refusal names the directory and the holder.
func TestRootLockNamesTheHolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "private"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	ctx := t.Context()
	unlock, err := root.Lock(ctx, "private/lock", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = root.Lock(ctx, "private/lock", 0)
	holder := fmt.Sprintf("held by pid %d since ", os.Getpid())
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "lock "+dir+" (waited 0s; "+holder) {
		t.Fatalf("second Lock: err = %v, want ErrLocked naming %s and the holder", err, dir)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	unlock, err = root.Lock(ctx, "private/lock", 0)
	if err != nil {
		t.Fatalf("Lock once released: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	checkMode(t, filepath.Join(dir, "private", "lock"), FileMode)
}

// TryLock locks a file without waiting and without writing to it
// (creating it if missing); a second holder is refused with ErrLocked
// until the first closes its file; a file removed or replaced by its
// holder is not the one a later TryLock gets; a link is refused.
func TestRootTryLock(t *testing.T) {
	dir := t.TempDir()
	root, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	const content = "partial download"
	if err := os.WriteFile(filepath.Join(dir, "partial"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := root.TryLock("partial")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.TryLock("partial"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), filepath.Join(dir, "partial")) {
		t.Fatalf("second TryLock: err = %v, want ErrLocked naming the file", err)
	}
	if same, err := root.SameFile("partial", held); err != nil || !same {
		t.Errorf("SameFile of the locked file: %v, %v", same, err)
	}
	if err := os.Rename(filepath.Join(dir, "partial"), filepath.Join(dir, "staged")); err != nil {
		t.Fatal(err)
	}
	if same, err := root.SameFile("partial", held); err != nil || same {
		t.Errorf("SameFile once renamed away: %v, %v; want false", same, err)
	}
	again, err := root.TryLock("partial") // a new, empty file: not the one held
	if err != nil {
		t.Fatalf("TryLock of a name whose file was renamed away: %v", err)
	}
	if info, err := again.Stat(); err != nil || info.Size() != 0 {
		t.Errorf("TryLock gave %v, %v; want a new empty file", info, err)
	}
	_ = again.Close()
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	checkContent(t, filepath.Join(dir, "staged"), content)

	created, err := root.TryLock("lock")
	if err != nil {
		t.Fatalf("TryLock of a missing file: %v", err)
	}
	_ = created.Close()
	checkContent(t, filepath.Join(dir, "lock"), "")
	if err := os.Symlink(filepath.Join(dir, "staged"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if f, err := root.TryLock("link"); !errors.Is(err, ErrNotRegular) {
		if f != nil {
			_ = f.Close()
		}
		t.Errorf("TryLock of a link: %v, want ErrNotRegular", err)
	}
	checkContent(t, filepath.Join(dir, "staged"), content)
}

// A holder that has just taken the lock writes who it is a moment later:
// the process that finds the lock held waits that moment rather than
// calling it unknown.
func TestReadHolderWaitsForANewHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		time.Sleep(20 * time.Millisecond)
		recordHolder(w)
	}()
	if got := readHolder(r); !strings.HasPrefix(got, fmt.Sprintf("pid %d since ", os.Getpid())) {
		t.Errorf("readHolder = %q, want the holder written a moment after", got)
	}
	if err := w.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if got := readHolder(r); got != "an unknown process" {
		t.Errorf("readHolder of an empty lock file = %q", got)
	}
}

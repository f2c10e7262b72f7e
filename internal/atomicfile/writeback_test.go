package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWritebackStartsEveryStep(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "archive.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type span struct{ off, n int64 }
	var got []span
	w := NewWriteback(f)
	w.start = func(_ *os.File, off, n int64) error {
		got = append(got, span{off, n})
		return nil
	}
	const chunk = 256 << 10
	for range 3 * writebackStep / chunk {
		w.Wrote(chunk) // three steps
	}
	w.Wrote(100) // the tail is left to SyncClose
	want := []span{{0, writebackStep}, {writebackStep, writebackStep}, {2 * writebackStep, writebackStep}}
	if len(got) != len(want) {
		t.Fatalf("writeback started for %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("writeback started for %v, want %v", got, want)
		}
	}

	// A download started over, or resumed from 5 MiB, counts from there.
	got = nil
	w.Reset(5 << 20)
	w.Wrote(writebackStep)
	if len(got) != 1 || got[0] != (span{5 << 20, writebackStep}) {
		t.Fatalf("after a reset to 5 MiB, writeback started for %v", got)
	}
}

func TestWritebackAsksTheSystem(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "archive.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	err = startWriteback(f, 0, 1<<20)
	if runtime.GOOS == "linux" && err != nil {
		t.Fatalf("sync_file_range on a regular file: %v", err)
	}
}

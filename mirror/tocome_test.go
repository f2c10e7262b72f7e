package mirror

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
)

// A download's claim on the hash slots is what is still to come of it:
// the size its origin announced less what arrived, again in full after a
// restart, nothing while its size is unknown.
func TestStagingSinkToCome(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "a.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sink := &stagingSink{fileSink: newFileSink(f, 0), counter: &atomic.Int64{}, done: func() {}}
	sink.stream = hashing.NewStreamHasher(hashing.ZipLimits{}, hashing.StreamOptions{})
	defer sink.stream.Close()
	if got := sink.toCome(); got != 0 {
		t.Errorf("size unknown: to come %d, want 0", got)
	}
	sink.Expect(100)
	if _, err := sink.Write(make([]byte, 30)); err != nil {
		t.Fatal(err)
	}
	if got := sink.toCome(); got != 70 {
		t.Errorf("30 of 100 bytes arrived: to come %d, want 70", got)
	}
	if err := sink.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := sink.toCome(); got != 100 {
		t.Errorf("after a restart: to come %d, want 100", got)
	}
	if _, err := sink.Write(make([]byte, 120)); err != nil {
		t.Fatal(err)
	}
	if got := sink.toCome(); got != 0 {
		t.Errorf("more than announced arrived: to come %d, want 0", got)
	}
}

// The build's tally of announced sizes, which the progress estimate goes
// by, counts each download once, whatever it announced again after a
// restart or a resumption.
func TestStagingSinksTallySizes(t *testing.T) {
	var tally sizeTally
	for i, size := range []int64{100, 250} {
		f, err := os.Create(filepath.Join(t.TempDir(), "a.zip"))
		if err != nil {
			t.Fatal(err)
		}
		sink := &stagingSink{fileSink: newFileSink(f, 0), counter: &atomic.Int64{}, sizes: &tally, done: func() {}}
		sink.stream = hashing.NewStreamHasher(hashing.ZipLimits{}, hashing.StreamOptions{})
		sink.Expect(size)
		sink.Expect(size) // announced again, by a restarted request
		sink.stream.Close()
		f.Close()
		if i == 0 && (tally.downloads.Load() != 1 || tally.bytes.Load() != 100) {
			t.Errorf("one download of 100 bytes: tally %d downloads, %d bytes", tally.downloads.Load(), tally.bytes.Load())
		}
	}
	if tally.downloads.Load() != 2 || tally.bytes.Load() != 350 {
		t.Errorf("downloads of 100 and 250 bytes: tally %d downloads, %d bytes; want 2 and 350", tally.downloads.Load(), tally.bytes.Load())
	}
}

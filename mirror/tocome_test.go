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

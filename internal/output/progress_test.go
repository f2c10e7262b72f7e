package output

import (
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/mirror"
)

func TestProgressStatus(t *testing.T) {
	p := &progressLine{total: 30}
	got := p.status(mirror.Progress{Done: 10, Bytes: 50_000_000}, 2*time.Second)
	want := "[10/30 packages] 50.0 MB at 25.0 MB/s, about 4s left"
	if got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
	if got := p.status(mirror.Progress{Done: 30, Bytes: 1}, time.Second); strings.Contains(got, "left") {
		t.Errorf("a finished build still estimates time left: %q", got)
	}
}

// Before any package has finished, the estimate comes from the sizes the
// origins announced: what the downloads under way still lack, and as much
// again as an average download for each not started.
func TestProgressStatusBeforeAPackageEnds(t *testing.T) {
	p := &progressLine{total: 8}
	got := p.status(mirror.Progress{Bytes: 100_000_000, Sized: 4, Expected: 400_000_000}, 10*time.Second)
	want := "[0/8 packages] 100.0 MB at 10.0 MB/s, about 1m10s left"
	if got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
	if got := p.status(mirror.Progress{Bytes: 100_000_000}, 10*time.Second); strings.Contains(got, "left") {
		t.Errorf("no size is known, yet the status estimates time left: %q", got)
	}
	// Once packages finish, the estimate still goes by bytes: eight
	// parallel downloads, two done, do not make the rest take 5/1 as long
	// again as the first two took.
	p = &progressLine{total: 12}
	got = p.status(mirror.Progress{Done: 2, Bytes: 20_000_000, Sized: 8, Complete: 2, Expected: 80_000_000}, 10*time.Second)
	if want := "[2/12 packages] 20.0 MB at 2.0 MB/s, about 50s left"; got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
	// Packages already present finish at once and download nothing: they
	// are not counted as downloads to come.
	p = &progressLine{total: 100}
	got = p.status(mirror.Progress{Done: 95, Bytes: 25_000_000, Sized: 5, Expected: 50_000_000}, 5*time.Second)
	if want := "[95/100 packages] 25.0 MB at 5.0 MB/s, about 5s left"; got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
}

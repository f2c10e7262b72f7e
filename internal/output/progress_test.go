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

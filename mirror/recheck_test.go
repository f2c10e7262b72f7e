package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

func TestParseRecheck(t *testing.T) {
	for in, want := range map[string]int{"100%": 100, "10%": 10, "1%": 1, "34%": 34} {
		if got, err := ParseRecheck(in); err != nil || got.Percent != want {
			t.Errorf("ParseRecheck(%q) = %+v, %v; want %d%%", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0%", "101%", "10", "ten%", "-5%", "10%%", "all"} {
		if _, err := ParseRecheck(in); err == nil {
			t.Errorf("ParseRecheck(%q) accepted it", in)
		}
	}
}

// Each share spreads the versions over Runs() runs in a row, on any
// day: every version is checked on exactly one of them.
func TestRecheckCoversEveryVersionOnce(t *testing.T) {
	var versions []addrs.Version
	for i := range 200 {
		versions = append(versions, addrs.MustParseVersion(fmt.Sprintf("%d.%d.0", i/10, i%10)))
	}
	first := RunOf(time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC))
	for _, pct := range []int{1, 10, 25, 34, 50, 99, 100} {
		rc := Recheck{Percent: pct}
		want := int64((100 + pct - 1) / pct)
		if rc.Runs() != want {
			t.Fatalf("%d%%: %d runs, want %d", pct, rc.Runs(), want)
		}
		times := map[string]int{}
		for run := first; run < first+rc.Runs(); run++ {
			rc.Run = run
			n := 0
			for _, v := range versions {
				if rc.Selects("registry.opentofu.org/hashicorp/foo", v) {
					times[v.String()]++
					n++
				}
			}
			if pct == 10 && (n < 10 || n > 35) {
				t.Errorf("10%%: run %d checks %d of 200 versions, far from 20", run, n)
			}
		}
		for _, v := range versions {
			if times[v.String()] != 1 {
				t.Errorf("%d%%: %s checked %d times over %d runs, want once", pct, v, times[v.String()], rc.Runs())
			}
		}
	}
	if (Recheck{}).Selects("registry.opentofu.org/hashicorp/foo", versions[0]) {
		t.Error("the zero Recheck selects a version")
	}
}

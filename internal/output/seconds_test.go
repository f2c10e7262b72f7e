package output

import (
	"encoding/json"
	"testing"
	"time"
)

// Durations in JSON events print as the milliseconds they are.
func TestSecondsPrintShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1719 * time.Millisecond:                     "1.719",
		2897 * time.Millisecond:                     "2.897",
		299*time.Millisecond + 400*time.Microsecond: "0.299",
		5 * time.Minute:                             "300",
		0:                                           "0",
	} {
		got, err := json.Marshal(seconds(d))
		if err != nil || string(got) != want {
			t.Errorf("seconds(%s) prints %s (%v), want %s", d, got, err, want)
		}
	}
}

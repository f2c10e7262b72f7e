// Package notifytest records what library code tells a notify.Handler,
// for tests that check the retries and waits a command would show.
package notifytest

import (
	"fmt"
	"sync"
	"time"
)

// Retry is one retry told.
type Retry struct {
	URL     string
	Attempt int
	Delay   time.Duration
	Err     string
}

// String is "URL attempt N: ERR".
func (r Retry) String() string { return fmt.Sprintf("%s attempt %d: %s", r.URL, r.Attempt, r.Err) }

// Recorder is a notify.Handler that keeps the retries told to it; calls
// may come from several goroutines.
type Recorder struct {
	mu      sync.Mutex
	retries []Retry
}

func (r *Recorder) Retry(url string, attempt int, delay time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retries = append(r.retries, Retry{URL: url, Attempt: attempt, Delay: delay, Err: err.Error()})
}

func (r *Recorder) Wait(string, string, time.Duration) {}

// Retries returns the retries told so far, in order.
func (r *Recorder) Retries() []Retry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Retry(nil), r.retries...)
}

package httpx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// errStalled cancels an attempt whose body stopped delivering bytes.
var errStalled = errors.New("stalled")

// errTooSlow cancels an attempt whose body arrives slower than the
// Policy's speed limit.
var errTooSlow = errors.New("too slow")

// watchdog reads a response body for one attempt and cancels the attempt
// (with errStalled or errTooSlow as the cause) when no byte arrives for
// StallTimeout, or fewer than SpeedLimit×SpeedTime bytes arrive in a
// window of SpeedTime. Windows follow each other from the first read on.
type watchdog struct {
	r      io.Reader
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	stopped  bool
	stall    *time.Timer // nil: no stall timeout
	stallFor time.Duration
	slow     *time.Timer // nil: no speed limit
	window   time.Duration
	least    int64 // bytes a window must bring
	got      int64 // bytes in the current window
	rate     int64 // the speed limit, bytes per second, for messages
}

// watch starts a watchdog over body as f's policy says.
func (f *Fetcher) watch(body io.Reader, cancel context.CancelCauseFunc) *watchdog {
	return newWatchdog(body, cancel, f.Policy)
}

// newWatchdog starts a watchdog over body as p says.
func newWatchdog(body io.Reader, cancel context.CancelCauseFunc, p Policy) *watchdog {
	w := &watchdog{r: body, cancel: cancel, stallFor: p.StallTimeout, window: p.SpeedTime, rate: p.SpeedLimit}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.StallTimeout > 0 {
		w.stall = time.AfterFunc(p.StallTimeout, func() { cancel(errStalled) })
	}
	if p.SpeedLimit > 0 && p.SpeedTime > 0 {
		w.least = bytesIn(p.SpeedLimit, p.SpeedTime)
		w.slow = time.AfterFunc(p.SpeedTime, w.checkSpeed)
	}
	return w
}

// bytesIn is how many bytes rate bytes a second bring in d, at least 1.
func bytesIn(rate int64, d time.Duration) int64 {
	n := float64(rate) * d.Seconds()
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(int64(n), 1)
}

func (w *watchdog) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.mu.Lock()
		w.got += int64(n)
		if w.stall != nil && !w.stopped {
			w.stall.Reset(w.stallFor)
		}
		w.mu.Unlock()
	}
	return n, err
}

// checkSpeed ends a window: too few bytes cancel the attempt, enough
// start the next window.
func (w *watchdog) checkSpeed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if w.got < w.least {
		w.cancel(fmt.Errorf("%w: %d bytes in %s, less than the speed limit of %d bytes a second", errTooSlow, w.got, w.window, w.rate))
		return
	}
	w.got = 0
	w.slow.Reset(w.window)
}

// stop ends the watch; a cancellation that already happened stays.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, t := range []*time.Timer{w.stall, w.slow} {
		if t != nil {
			t.Stop()
		}
	}
}

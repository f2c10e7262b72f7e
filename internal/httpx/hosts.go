package httpx

import (
	"fmt"
	"net/url"
	"sync"
)

// SlowHostStrikes is how many transfers in a row from one host may be
// too slow or stall before the rest of the run gives up on the host.
//
// Why three: one slow transfer is congestion or a retransmission storm,
// and the Fetcher retries it; a second one may still be bad luck; a third
// in a row, with no transfer from the host completing in between, is a
// host that is not going to recover within the run. Each strike costs up
// to SpeedTime (30 s by default) or StallTimeout, so three cost what one
// archive's retries used to; without the limit every archive spent all of
// its own attempts (5 of 30 s, in waves of the build's parallel downloads:
// more than 280 s for a release of 12 archives from a host sending 20
// bytes a second).
const SlowHostStrikes = 3

// Hosts is what one command run has learnt about the hosts it fetches
// from, shared by all its Fetchers: a host whose transfers were too slow
// (the Policy's speed limit) or stalled (its stall timeout)
// SlowHostStrikes times in a row, no transfer from it completing in
// between, is written off for the rest of the run. Every later attempt of
// a request to it, and every retry under way, then fails at once, without
// a retry, with a *HostError that names the host. A transfer that
// completes wipes the host's strikes: a host that was slow once and then
// recovers is never written off.
//
// Hosts are told apart by host name and port. A nil *Hosts learns
// nothing. It is safe for concurrent use.
type Hosts struct {
	mu      sync.Mutex
	strikes map[string]int
	off     map[string]*HostError
}

// NewHosts returns a Hosts that knows nothing yet: one per command run.
func NewHosts() *Hosts {
	return &Hosts{strikes: map[string]int{}, off: map[string]*HostError{}}
}

// HostError is a request to a host the run has given up on.
type HostError struct {
	Host    string // host:port
	Strikes int
	// Last is why the transfer that wrote the host off failed: too slow
	// (the speed limit) or stalled (the stall timeout).
	Last error
}

func (e *HostError) Error() string {
	return fmt.Sprintf("gave up on %s for the rest of this run after %d transfers from it in a row were too slow or stalled (the last: %v)", e.Host, e.Strikes, e.Last)
}

// Unwrap returns the failure that wrote the host off.
func (e *HostError) Unwrap() error { return e.Last }

// check returns the HostError of u's host if it was written off.
func (h *Hosts) check(u *url.URL) error {
	if h == nil || u == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.off[canonicalHost(u)]; ok {
		return e
	}
	return nil
}

// slow counts a transfer from u's host that was too slow or stalled with
// err, and writes the host off at SlowHostStrikes.
func (h *Hosts) slow(u *url.URL, err error) {
	if h == nil || u == nil {
		return
	}
	host := canonicalHost(u)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.strikes[host]++
	if n := h.strikes[host]; n >= SlowHostStrikes && h.off[host] == nil {
		h.off[host] = &HostError{Host: host, Strikes: n, Last: err}
	}
}

// done records a transfer from u's host that completed: its strikes are
// wiped (a host already written off stays so).
func (h *Hosts) done(u *url.URL) {
	if h == nil || u == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.strikes, canonicalHost(u))
}

package syncx

import (
	"context"
	"slices"
	"sync"
)

// Slots is a counting semaphore that hands freed slots by priority, with
// a bound on waiting: every other slot freed goes to the waiter with the
// highest priority (the earliest among equals), the others to the waiter
// that has waited longest. tfmirror's hashing gives the download with
// the most bytes still to come its CPU first, since it finishes last; the
// turns for the longest waiting keep every other download moving, so
// that none stalls long enough to be given up.
type Slots struct {
	mu      sync.Mutex
	free    int
	waiters []*waiter // in arrival order
	byAge   bool      // the next slot freed goes to the longest waiting
}

type waiter struct {
	prio  int64
	ready chan struct{}
}

// NewSlots returns n free slots (at least one).
func NewSlots(n int) *Slots { return &Slots{free: max(n, 1)} }

// Acquire takes a slot, waiting for one with priority prio, or fails with
// ctx's error.
func (s *Slots) Acquire(ctx context.Context, prio int64) error {
	s.mu.Lock()
	if s.free > 0 && len(s.waiters) == 0 {
		s.free--
		s.mu.Unlock()
		return nil
	}
	w := &waiter{prio: prio, ready: make(chan struct{})}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-w.ready: // given a slot meanwhile: pass it on
			s.releaseLocked()
		default:
			s.waiters = slices.DeleteFunc(s.waiters, func(o *waiter) bool { return o == w })
		}
		return ctx.Err()
	}
}

// Release frees a slot, for the next waiter.
func (s *Slots) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *Slots) releaseLocked() {
	if len(s.waiters) == 0 {
		s.free++
		return
	}
	next := 0 // the longest waiting
	if !s.byAge {
		for i, w := range s.waiters {
			if w.prio > s.waiters[next].prio {
				next = i
			}
		}
	}
	s.byAge = !s.byAge
	w := s.waiters[next]
	s.waiters = slices.Delete(s.waiters, next, next+1)
	close(w.ready)
}

package syncx

import (
	"container/heap"
	"context"
	"sync"
)

// Slots is a counting semaphore that hands a freed slot to the waiter
// with the highest priority (the earliest to ask among equals), not to
// the first in line: tfmirror's hashing gives the download with the most
// bytes still to come its CPU first, since it finishes last.
type Slots struct {
	mu      sync.Mutex
	free    int
	waiters waitHeap
	seq     uint64
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
	w := &waiter{prio: prio, seq: s.seq, ready: make(chan struct{})}
	s.seq++
	heap.Push(&s.waiters, w)
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
			heap.Remove(&s.waiters, w.index)
		}
		return ctx.Err()
	}
}

// Release frees a slot, giving it to the waiter with the highest priority.
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
	w := heap.Pop(&s.waiters).(*waiter)
	close(w.ready)
}

type waiter struct {
	prio  int64
	seq   uint64
	index int
	ready chan struct{}
}

// waitHeap orders waiters by priority, highest first, then by arrival.
type waitHeap []*waiter

func (h waitHeap) Len() int { return len(h) }
func (h waitHeap) Less(i, j int) bool {
	if h[i].prio != h[j].prio {
		return h[i].prio > h[j].prio
	}
	return h[i].seq < h[j].seq
}
func (h waitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *waitHeap) Push(x any) {
	w := x.(*waiter)
	w.index = len(*h)
	*h = append(*h, w)
}
func (h *waitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

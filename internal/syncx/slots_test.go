package syncx

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// waitQueued waits until n goroutines wait for a slot.
func waitQueued(t *testing.T, s *Slots, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.mu.Lock()
		queued := len(s.waiters)
		s.mu.Unlock()
		if queued == n {
			return
		}
	}
	t.Fatalf("%d waiters never queued", n)
}

// Freed slots go in turn to the waiter with the highest priority (the
// earliest among equals) and to the one that has waited longest.
func TestSlotsGiveTheHighestPriorityFirst(t *testing.T) {
	s := NewSlots(1)
	ctx := context.Background()
	if err := s.Acquire(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for i, w := range []struct {
		name string
		prio int64
	}{{"low", 1}, {"high", 100}, {"mid-first", 50}, {"mid-second", 50}, {"top", 200}, {"mid-third", 50}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Acquire(ctx, w.prio); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, w.name)
			mu.Unlock()
			s.Release()
		}()
		waitQueued(t, s, i+1) // arrive in this order
	}
	s.Release()
	wg.Wait()
	// By priority: top; by age: low; by priority: high; by age:
	// mid-first; by priority: mid-second; by age: mid-third.
	want := []string{"top", "low", "high", "mid-first", "mid-second", "mid-third"}
	for i := range want {
		if i >= len(order) || order[i] != want[i] {
			t.Fatalf("slots given in the order %v, want %v", order, want)
		}
	}
}

// A waiter whose context ends leaves the queue; a slot it was given at
// that moment goes to the next waiter, so none is lost.
func TestSlotsCancelledWaiterLosesNoSlot(t *testing.T) {
	s := NewSlots(2)
	ctx := context.Background()
	for range 2 {
		if err := s.Acquire(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- s.Acquire(cctx, 10) }()
	waitQueued(t, s, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v, want context.Canceled", err)
	}
	s.Release()
	s.Release()
	// Both slots are free again: two more take them at once.
	tctx, tcancel := context.WithTimeout(ctx, 5*time.Second)
	defer tcancel()
	for range 2 {
		if err := s.Acquire(tctx, 0); err != nil {
			t.Fatalf("a slot was lost: %v", err)
		}
	}
	if s.free != 0 || len(s.waiters) != 0 {
		t.Fatalf("free %d, waiters %d; want 0 and 0", s.free, len(s.waiters))
	}
}

// Many goroutines taking and releasing slots never hold more than there
// are.
func TestSlotsBoundTheHolders(t *testing.T) {
	s := NewSlots(3)
	var mu sync.Mutex
	holding, most := 0, 0
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				if err := s.Acquire(context.Background(), int64((i*7+j)%5)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holding++
				most = max(most, holding)
				mu.Unlock()
				time.Sleep(10 * time.Microsecond)
				mu.Lock()
				holding--
				mu.Unlock()
				s.Release()
			}
		}()
	}
	wg.Wait()
	if most > 3 || most == 0 {
		t.Fatalf("at most %d held at once, want 1 to 3", most)
	}
}

// A waiter of the lowest priority is not starved by others of higher
// priority that keep asking again: it is served within two turns of every
// waiter ahead of it.
func TestSlotsServeTheLongestWaitingToo(t *testing.T) {
	s := NewSlots(1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	grants := 0
	var wg sync.WaitGroup
	for range 3 { // busy, high priority, always asking again
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && s.Acquire(ctx, 1000) == nil {
				mu.Lock()
				grants++
				mu.Unlock()
				time.Sleep(100 * time.Microsecond)
				s.Release()
			}
		}()
	}
	waitQueued(t, s, 2) // the three busy ones hold the slot or wait for it
	mu.Lock()
	before := grants
	mu.Unlock()
	lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
	defer lcancel()
	if err := s.Acquire(lctx, 0); err != nil {
		cancel()
		wg.Wait()
		t.Fatalf("the low-priority waiter was starved: %v", err)
	}
	mu.Lock()
	waited := grants - before
	mu.Unlock()
	s.Release()
	cancel()
	wg.Wait()
	if waited > 2*3+1 {
		t.Fatalf("the low-priority waiter got a slot after %d grants to the others, want at most %d", waited, 2*3+1)
	}
}

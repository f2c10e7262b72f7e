package syncx

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Goroutines locking the same key run one at a time (the race detector
// sees the counters written under the key's lock only), and once all
// are done no key is kept.
func TestKeyedMutexSerializesEachKey(t *testing.T) {
	var k KeyedMutex
	const keys, workers, rounds = 4, 8, 200
	counts := make([]int, keys) // written without any lock but the key's
	var inside [keys]int
	var mu sync.Mutex // guards inside, to catch two holders of one key
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				i := (w + r) % keys
				unlock := k.Lock(fmt.Sprint("key", i))
				mu.Lock()
				inside[i]++
				if inside[i] != 1 {
					t.Errorf("key%d held by %d goroutines at once", i, inside[i])
				}
				mu.Unlock()
				counts[i]++
				mu.Lock()
				inside[i]--
				mu.Unlock()
				unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		total += c
	}
	if total != workers*rounds {
		t.Errorf("counted %d, want %d", total, workers*rounds)
	}
	if n := len(k.keys); n != 0 {
		t.Errorf("%d keys kept after every holder unlocked, want none", n)
	}
}

// A held key blocks a second Lock of the same key until it is unlocked,
// and no other key.
func TestKeyedMutexBlocksOnlyItsKey(t *testing.T) {
	var k KeyedMutex
	unlockA := k.Lock("a")
	other := make(chan struct{})
	go func() {
		k.Lock("b")()
		close(other)
	}()
	select {
	case <-other:
	case <-time.After(10 * time.Second):
		t.Fatal("Lock(b) waited for a")
	}
	same := make(chan struct{})
	go func() {
		k.Lock("a")()
		close(same)
	}()
	select {
	case <-same:
		t.Fatal("Lock(a) did not wait for the holder of a")
	case <-time.After(100 * time.Millisecond):
	}
	unlockA()
	select {
	case <-same:
	case <-time.After(10 * time.Second):
		t.Fatal("Lock(a) still waiting after a was unlocked")
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.keys) != 0 {
		t.Errorf("keys kept: %v", k.keys)
	}
}

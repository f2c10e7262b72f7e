package syncx

import "sync"

// KeyedMutex is a set of mutexes, one per key: Lock of a key waits only
// for holders of the same key. A key's mutex is made when it is first
// locked and dropped once nobody holds or waits for it, so a long run
// over many keys keeps only those in use.
//
// The zero value is ready to use. A KeyedMutex must not be copied after
// first use.
type KeyedMutex struct {
	mu   sync.Mutex
	keys map[string]*keyedEntry
}

// keyedEntry is the mutex of one key and how many goroutines hold it or
// wait for it.
type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

// Lock locks key, waiting while another goroutine holds it, and returns
// the function that unlocks it, which must be called exactly once.
func (k *KeyedMutex) Lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.keys == nil {
		k.keys = make(map[string]*keyedEntry)
	}
	e, ok := k.keys[key]
	if !ok {
		e = &keyedEntry{}
		k.keys[key] = e
	}
	e.refs++ // counted before waiting: the entry stays while we wait
	k.mu.Unlock()

	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		e.refs--
		if e.refs == 0 {
			delete(k.keys, key)
		}
		k.mu.Unlock()
	}
}

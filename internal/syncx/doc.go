// Package syncx holds tfmirror's small concurrency helpers: KeyedMutex, a
// mutex per key that serializes work on one name (a provider's documents,
// a repository's tag) within a process; Sleep, a wait that ends early when
// its context does; and Slots, a semaphore that serves, in turns, the
// waiter with the highest priority and the one waiting longest (the
// build's hash slots).
//
// It does not lock between processes or machines (atomicfile.Lock and
// each store's Lock do), and it does not decide how long to wait or how
// often to retry: backoff and poll intervals stay with their callers. It
// imports only the standard library.
package syncx

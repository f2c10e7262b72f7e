// Package syncx holds the two small concurrency helpers tfmirror wrote
// again in several places: KeyedMutex, a mutex per key that serializes
// work on one name (a provider's documents, a repository's tag) within a
// process, and Sleep, a wait that ends early when its context does.
//
// It does not lock between processes or machines (atomicfile.Lock and
// each store's Lock do), and it does not decide how long to wait or how
// often to retry: backoff and poll intervals stay with their callers. It
// imports only the standard library.
package syncx

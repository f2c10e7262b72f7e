// Package lockfile reads and writes OpenTofu dependency lock files
// (.terraform.lock.hcl) byte for byte as OpenTofu 1.12 does.
//
// It owns the lock file's syntax and validation rules (normalized provider
// labels, canonical versions, normalized constraint strings, "scheme:value"
// hashes) and the normalization of a provider's version constraints into
// the single string OpenTofu records. From what a mirror.Locker selects
// (versions and hashes: the core decides those), it computes a root
// module's lock file (Compute) and says what "init" would do to the one on
// disk (Check): keep it, rewrite it, or fail, by the rule both clients
// share (locks compared by provider, version and hashes; the file
// rewritten whole, in their layout, only when those change).
//
// Reading does not apply OpenTofu's predecessor-registry shim: entries are
// kept exactly as written, for any registry host.
package lockfile

// Package lockfile reads and writes OpenTofu dependency lock files
// (.terraform.lock.hcl) byte for byte as OpenTofu 1.12 does.
//
// It owns the lock file's syntax and validation rules (normalized provider
// labels, canonical versions, normalized constraint strings, "scheme:value"
// hashes) and the normalization of a provider's version constraints into
// the single string OpenTofu records. It does not resolve versions, compute
// hashes or decide which providers belong in the file.
//
// Reading does not apply OpenTofu's predecessor-registry shim: entries are
// kept exactly as written, for any registry host.
package lockfile

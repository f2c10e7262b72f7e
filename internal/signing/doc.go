// Package signing checks OpenPGP detached signatures over upstream SHA256SUMS
// documents, the way OpenTofu authenticates registry packages, and says
// which key made a signature, whether it has expired and when it expires.
// Every form of one key offered together (a key re-issued with a later
// expiry) is read as that one key, its newest self-signature deciding.
//
// It owns the cryptography only: which keys are acceptable, what to do
// with an expired key and with unsigned packages is the caller's policy
// (package mirror).
package signing

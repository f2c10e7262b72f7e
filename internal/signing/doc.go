// Package signing checks OpenPGP detached signatures over upstream SHA256SUMS
// documents, the way OpenTofu authenticates registry packages.
//
// It owns the cryptography only: which keys are acceptable and what to do
// with unsigned packages is the caller's policy (package mirror).
package signing

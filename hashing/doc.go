// Package hashing decides whether bytes are what was promised.
//
// It owns the two package hash schemes OpenTofu and Terraform understand
// ("h1:", Go's dirhash over the archive's entries, and "zh:", the SHA-256 of
// the zip file itself), the rule an archive must pass before it is hashed
// and published (limits, and CheckUnpackable: it unpacks into a directory
// exactly as named, the rule the unpacked filesystem layout extracts by),
// the parsing of upstream SHA256SUMS documents, a writer that hashes
// bytes as they stream to disk, the StreamHasher that computes h1: from a
// zip as its bytes arrive (checked against the central directory at the
// end, else the file is hashed), and the module package format
// (PackModule: a directory as a zip whose bytes depend only on its
// content).
//
// h1: is computed in one pass over the archive, in dirhash's Hash1 format,
// inflating with its own DEFLATE decoder (hashing/internal/inflate, held
// to compress/flate by differential fuzzing); the tests and fuzz targets
// hold h1: to golang.org/x/mod/sumdb/dirhash itself.
//
// It does not fetch anything, check signatures or decide what to mirror; it
// depends on the standard library only.
package hashing

// Package replica writes a static copy of the provider registry protocol
// (providers.v1) next to a network mirror tree, so that a client pointed at
// it with a CLI-config host block installs providers exactly as it would
// from their origin registry: it reads the release's SHA256SUMS and its
// detached signature, checks the signature against the signing keys in the
// download document and the archive against the signed checksum.
//
// Under <root>/replica/<host>/ (the punycode hostname of the origin) it
// writes, for every provider of that host:
//
//	v1/providers/<namespace>/<type>/versions
//	v1/providers/<namespace>/<type>/<version>/download/<os>/<arch>
//
// and a discovery document .well-known/terraform.json. The download
// documents point, with relative URLs, at the archives, the upstream
// SHA256SUMS and its signature that the network mirror already holds, so
// nothing is stored twice and the replica works wherever the tree is served.
//
// Everything comes from the tree: <version>.json says which platforms are
// published, the provenance record gives each archive's upstream file name,
// the signing keys and the kept SHA256SUMS and signature. A release without
// a provenance record cannot be replicated and is left out with a warning; a
// release whose kept files no longer verify is left out and reported as a
// verification failure. The replica is rebuilt from the tree every time, so
// it always reflects what the tree holds, and files it no longer needs are
// removed after the new ones are in place.
//
// Everything is read and written through layout.Tree, so the replica
// lands wherever the tree is kept: a directory or a bucket.
//
// The package does not download or publish packages (package mirror and
// layout do), and does not decide trust: it copies what the origin
// advertised, which the build already checked under the trust policy.
package replica

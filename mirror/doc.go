// Package mirror decides what to publish.
//
// It owns the build: resolving each requirement to the releases to mirror,
// planning one package per provider, version and platform, fetching every
// package once to the workspace, authenticating it against the upstream
// SHA256SUMS and its OpenPGP signature, and handing verified releases to
// every destination tree (package layout publishes them). It reports every
// package's outcome as events and in a final Report.
//
// It owns the one trust decision, TrustPolicy.Authenticate, which the build,
// the Locker (lock files), the Verifier (verify, bundle create and import)
// and the registry replica all call, so a release gets the same verdict
// from every command.
//
// It defines the seams it needs (Source for an origin, and Location for
// where a package's archive, SHA256SUMS and signature are; SignatureChecker
// for OpenPGP; destinations are layout's Reader and Store) and knows nothing
// of HTTP, HCL, cobra, S3, OCI or exit codes: adapters in internal/
// implement those seams and the CLI wires them together. A location is a
// value, not a URL: a registry's fetches over HTTP, a mirror's reads the
// mirror's files (MirrorSource, HashedSource), and each shows itself
// without a secret. It does not know the tree's files (package layout
// does).
package mirror

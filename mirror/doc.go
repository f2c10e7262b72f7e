// Package mirror decides what to publish.
//
// It owns the build: resolving each requirement to the releases to mirror,
// planning one package per provider, version and platform (keeping what
// every destination already holds), fetching every package once to the
// workspace, authenticating it against the upstream SHA256SUMS and its
// OpenPGP signature, and handing verified releases to every destination
// through one port, Destination: a tree (layout.TreeDestination) or an OCI
// registry or image layout (internal/ocistore), held to one contract by
// mirror/desttest. It reports every package's outcome as events and in a
// final Report. It mirrors modules the same way (ModuleBuilder), and
// follows the registry modules each mirrored module calls within limits
// the manifest can raise (ModuleTreeLimits: the depth of a chain of calls,
// the module versions of a build, the calls of one module); what goes
// past one is not fetched, or, for too many calls, not published, and
// fails with an error naming the chain of calls (ModuleLimitError).
//
// It owns the one trust decision, TrustPolicy.Authenticate, which the build,
// the Locker (lock files), the Verifier (verify, bundle create and import)
// and the registry replica all call, so a release gets the same verdict
// from every command. For a build it also compares a release's signer
// with the keys that signed the provider's releases the destinations hold
// (KeyHistory: a key change, decided by the same policy), and with
// Options.Recheck it asks the origin again for the SHA256SUMS and
// signature of releases already held and compares them with what the
// trees kept (a re-release, RereleaseError). It owns the one Verifier,
// which checks any mirror clients read (Listed: a tree's documents or a
// registry's tags). Wherever a
// package is read back, it is held to the limits of its kind, the ones a
// build applies: a provider package to hashing.ZipLimits, a module
// package to hashing.ModuleLimits (smaller), never one to the other's.
//
// It defines the seams it needs (Source for an origin, and Location for
// where a package's archive, SHA256SUMS and signature are; SignatureChecker
// for OpenPGP; Describer for the SBOM of each package it verifies, made from
// a neutral Description (its hashes, the Go build information hashing read
// from its executable, its origin and signing key), and SBOMChecker for
// verify's check of one, both in the command layer's format; Advisor for
// the known vulnerabilities of each package it verifies, from the same
// build information, as neutral Advisory values (the database is the
// command layer's), on which its AdvisoryPolicy holds back or refuses a
// release, and KeptAdvisor for those of the packages it keeps, from what
// the destinations hold of them (reported, never held back); Destination for where it publishes; Packages and Listed for
// what it reads back) and knows nothing of HTTP, HCL, cobra, S3, OCI or exit
// codes: adapters in internal/ implement those seams and the command layer
// (internal/app) composes them. A location is a value, not a URL: a
// registry's fetches over HTTP, a mirror's reads the mirror's files
// (MirrorSource, HashedSource), and each shows itself without a secret. It
// does not know the tree's files (package layout does).
package mirror

// Package mirror decides what to publish.
//
// It owns the build: resolving each requirement to the releases to mirror,
// planning one package per provider, version and platform, fetching every
// package to staging, authenticating it against the upstream SHA256SUMS and
// its OpenPGP signature under the trust policy, and handing verified
// releases to package layout in publish order. It reports every package's
// outcome as events and in a final Report.
//
// It defines the seams it needs (Source for an origin, SignatureChecker for
// OpenPGP) and knows nothing of HTTP, HCL, cobra or exit codes: adapters in
// internal/ implement those seams and the CLI wires them together.
package mirror

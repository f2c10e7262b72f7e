// Package release holds the tests of the release configuration at the
// repository's root: .goreleaser.yaml (the binaries, archives and container
// image a release publishes) and the Dockerfile of that image. It has no
// code.
//
// The tests read both files and check what users of the archives and the
// image rely on: static binaries; README and LICENSE in every archive; an
// image of the binary goreleaser builds, as its entrypoint, on distroless
// static with no shell, run as a numeric non-root user, with the OCI labels.
// With goreleaser ($TFMIRROR_GORELEASER, which scripts/test builds and runs
// `goreleaser check` with) they also make a snapshot release for the host's
// platform and read what it wrote.
//
// This package does not check that the image builds: that needs Docker
// and buildx, which neither CI nor the tests have.
package release

# The release image, ghcr.io/tfmirror/tfmirror (docs/ci.md, "The container image").
#
# goreleaser builds it (dockers_v2 in .goreleaser.yaml) from the static
# binaries it has just built, one per platform: its build context holds
# linux/amd64/tfmirror and linux/arm64/tfmirror, and LICENSE. Nothing is
# compiled here, and `docker build .` in the repository does not work.
#
# distroless static: CA certificates, tzdata, /etc/passwd with the nonroot
# user (65532); no shell, no package manager, no git (module sources that
# are git repositories cannot be fetched from this image).
FROM gcr.io/distroless/static-debian12:nonroot

ARG TARGETPLATFORM
COPY $TARGETPLATFORM/tfmirror /usr/bin/tfmirror
COPY LICENSE /usr/share/doc/tfmirror/LICENSE

# USER before WORKDIR: BuildKit (which buildx runs) creates the directory
# owned by that user, so a build that writes to the working directory works
# without a mount, and a named volume mounted there starts out writable.
# Usually the host's directory is mounted at /work (docs/ci.md).
USER 65532:65532
WORKDIR /work

ENTRYPOINT ["/usr/bin/tfmirror"]

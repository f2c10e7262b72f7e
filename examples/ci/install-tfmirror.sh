#!/bin/sh
# Installs one pinned tfmirror release, after checking the archive against
# its SHA-256: the CI examples run this (copy it next to your pipeline).
#
#   TFMIRROR_VERSION  the release, without the v (e.g. 1.4.0)
#   TFMIRROR_SHA256   the SHA-256 of tfmirror_<VERSION>_<os>_<arch>.tar.gz,
#                     from that release's checksums.txt (check checksums.txt
#                     once with cosign, as docs/ci.md shows, then pin the line)
#   TFMIRROR_BIN      where to install (default /usr/local/bin)
#
# It fails, installing nothing, on any mismatch or download error.
set -eu
: "${TFMIRROR_VERSION:?set TFMIRROR_VERSION to the release to install}"
: "${TFMIRROR_SHA256:?set TFMIRROR_SHA256 to the archive line of that release's checksums.txt}"
os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) echo "install-tfmirror: no release build for $(uname -m)" >&2 && exit 1 ;;
esac
releases=${TFMIRROR_RELEASES:-https://github.com/tfmirror/tfmirror/releases/download}
file=tfmirror_${TFMIRROR_VERSION}_${os}_${arch}.tar.gz
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl --fail --silent --show-error --location --proto '=https' --tlsv1.2 \
	--output "$tmp/$file" "$releases/v$TFMIRROR_VERSION/$file"
echo "$TFMIRROR_SHA256  $tmp/$file" | sha256sum --check --strict --quiet
tar -xzf "$tmp/$file" -C "$tmp" tfmirror
install -m 0755 "$tmp/tfmirror" "${TFMIRROR_BIN:-/usr/local/bin}/tfmirror"
"${TFMIRROR_BIN:-/usr/local/bin}/tfmirror" version

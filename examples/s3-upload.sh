#!/usr/bin/env bash
# Prefer the built-in destination: `tfmirror build --out s3://BUCKET/PREFIX/`
# publishes straight into the bucket in publish order, with content types,
# without a local copy, and knows from the bucket what is already there.
# This script is still useful to copy an existing local tree (a bundle
# imported on an air-gapped host, say) into a bucket with only the AWS CLI.
#
# Upload a tfmirror tree to an S3 bucket (or any S3-compatible store) in
# publish order, so the bucket never lists a version whose files are not
# there yet: archives and kept upstream files first, then <version>.json,
# then index.json, then catalog.json. Nothing is deleted: a mirror only grows.
#
#   examples/s3-upload.sh site s3://my-bucket/providers
#
# Needs the AWS CLI (v2) and credentials with s3:PutObject on the prefix.
# Serve the prefix over HTTPS (CloudFront or similar) as the network_mirror
# URL. Extra arguments go to every "aws s3 sync" (e.g. --endpoint-url).
set -euo pipefail

site=${1:?usage: s3-upload.sh SITE s3://BUCKET/PREFIX [aws s3 sync options]}
dest=${2:?usage: s3-upload.sh SITE s3://BUCKET/PREFIX [aws s3 sync options]}
shift 2

sync() { aws s3 sync "$site" "$dest" --no-progress --exclude '.tfmirror/*' "$@"; }

# 1. Archives and the kept SHA256SUMS, signatures and provenance records.
sync --exclude '*.json' --include '*_provenance.json' --exclude '.tfmirror/*' "$@"
# 2. <version>.json documents.
sync --exclude '*' --include '*.json' --exclude '*/index.json' --exclude '*_provenance.json' \
	--exclude 'catalog.json' --content-type application/json --cache-control no-cache "$@"
# 3. index.json documents.
sync --exclude '*' --include '*/index.json' --content-type application/json --cache-control no-cache "$@"
# 4. The catalog of providers.
sync --exclude '*' --include 'catalog.json' --content-type application/json --cache-control no-cache "$@"

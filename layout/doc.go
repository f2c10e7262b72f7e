// Package layout decides where bytes go in a static mirror tree and makes
// sure no client ever sees half of it.
//
// It owns the network mirror layout (host/namespace/type/index.json,
// <version>.json and the archives), the byte-exact JSON those files hold,
// atomic world-readable writes (temporary file, fsync, rename, fsync of the
// directory) and the publish order: archives first, then <version>.json,
// then index.json, so a live web root never points at a missing file.
//
// It does not decide what to mirror or whether bytes can be trusted; callers
// hand it archives that were already verified.
package layout

// Package bundle packs a built mirror into one file that can be carried
// into an air-gapped network, and unpacks it there without trusting it.
//
// It owns the bundle format: a gzip-compressed tar holding manifest.json
// first (every other file's path, size and SHA-256), optionally
// manifest.json.sig (a detached OpenPGP signature of the manifest by a key
// the operator provides), then the files in the manifest's order:
// mirror/ (the published tree, without the private .tfmirror/ directory),
// lock-files/ (.terraform.lock.hcl files, if any were given) and
// cli-config/ (CLI configuration snippets for tofu and terraform). Bundles
// are deterministic: the same tree gives the same bytes (apart from the
// signature, which records when it was made).
//
// Create packs only regular files, follows no symbolic link in the mirror
// or to a lock file, and packs a lock file only if it parses as one.
//
// Import refuses a bundle unless every check passes before anything becomes
// visible: entry names and types, the manifest (and its signature, when
// trusted keys are given), every file's size and SHA-256, every JSON
// document in the canonical form tfmirror writes, every lock file parsing
// as one, the mirror's change records (layout.Tree.CheckChanges: each
// record the index lists present, bounded, with the digest and name the
// index gives), and the mirror itself as "tfmirror verify" checks it (archives
// against the kept SHA256SUMS, signatures against the kept keys, every
// archive url the release's own archive; every module package within
// the module limits, hashing.ModuleLimits, that a build packs modules
// under, never the larger provider limits). A bundle cannot amplify: the
// manifest's size and entry count are capped (Limits), each document's
// size too, and decompression stops at what the manifest declares (and at
// a ratio to the compressed size), so a compression bomb is refused early.
// The bundle is unpacked into a staging directory of this process's own
// (a layout.Workspace in the destination's private .tfmirror/ directory,
// which concurrent imports and builds never share or remove; for a
// bucket, a new temporary directory), then published into the
// destination by layout's planner under the Refuse policy: everything is
// merged and checked before the first write, and any file the destination
// holds with other bytes refuses the bundle. The registry warnings the
// bundle keeps of each of its providers (warnings.json, parsed before the
// first write) then replace the destination's for those providers: the
// bundle is the connected mirror's latest word on them (failing to keep
// them is a warning of the report: the mirror is published by then).
//
// Both ends take a tree their caller opened (a directory or a bucket,
// through internal/endpoint): Create packs a directory in place under its
// lock and copies any other store's mirror into a local snapshot first,
// without its lock (see createFromStore), copying no file past the size
// the store's listing gives it (documents past their size limit, files a
// listing does not size past CreateOptions.MaxFileBytes): an object that
// goes on past its bound is refused before more than the bound is
// written. Import writes through the destination's store, under its
// Publish lock, the same way for both.
//
// It does not decide what a mirror contains (package layout does), how its
// contents are verified (package mirror does), open locations (package
// endpoint does) or refresh the views derived from the tree (its caller
// does, through ImportOptions.Refresh) or write the change records (its
// caller does, through ImportOptions.Record, with ImportReport.Added).
package bundle

// Package layout is the one owner of a mirror tree's files: where bytes go
// and how they become visible, so that no client ever sees half of a tree.
//
// It owns:
//   - the network mirror layout (host/namespace/type/index.json,
//     <version>.json, the archives, the kept origin files and provenance,
//     each package's SBOM beside its archive, named by its provenance entry,
//     a provider's kept registry warnings (warnings.json),
//     catalog.json with what it says of each provider (DescribeCatalog:
//     its warnings and signing keys, SignerHistory), and the root records
//     first-seen.json and
//     vulnerabilities.json) and the byte-exact JSON those files hold (an SBOM's
//     bytes are the caller's, kept as given): no other
//     package parses them; they read a tree through Tree's typed reads,
//     each document bounded before it is parsed (MaxDocumentBytes,
//     MaxSumsBytes; MaxVersions versions in an index.json, MaxPlatforms
//     archives in a <version>.json), and a decoder's complaint quoted
//     bounded and escaped (package excerpt);
//   - the one publish planner (Tree.PublishAll) with its explicit merge
//     policy (Policy: Repair for builds, Refuse for bundle import) and the
//     publish order (FileKind): archives, SBOMs and origin files, then provenance,
//     then <version>.json, then index.json, then catalog.json;
//   - the destination seam: Reader (what verify, lock and the planner read
//     from: a directory, a URL, a bucket) and Store (what every writer of a
//     tree writes through), whose guarantees the Store doc states (its
//     lock modes, and Conditional for stores several publishers write at
//     once), and the first Store, DirStore (atomic world-readable writes:
//     temporary file, fsync, rename, fsync of the directory; an exclusive
//     lock in either mode), and which of a tree's directories are
//     tfmirror's, searched for what interrupted writes left;
//   - the tree as a build's destination (TreeDestination, the tree side of
//     mirror.Destination: what it holds complete, Held; its publication),
//     and what it tells clients of each version (Listing, read by the
//     verifier);
//   - the local Workspace downloads are staged in, private to one
//     process however many builds, imports and prunes share its
//     directory on one host (each a run whose file lock says whether its
//     owner is alive; what dead owners left is removed by the next), and
//     the filesystem layouts (packed, unpacked) made from a local network
//     tree, each package appearing complete or not at all.
//
// It does not decide what to mirror or whether bytes can be trusted:
// callers hand it archives that were already verified, and the trust
// decision is package mirror's. Nor is it the filesystem layer: atomic
// writes, the directory that never follows a link, the file lock and the
// removal of temporary files are package internal/atomicfile's, which
// DirStore, Workspace and Materialize are built on.
package layout

// Package htmlcatalog writes index.html at the top of a mirror tree: a
// static page that shows people what the mirror holds, so that nobody has
// to read JSON to find out. It is plain HTML with inline CSS, readable from
// a local directory (file://), nginx or a bucket, under any path prefix.
//
// The page shows:
//   - every provider, its versions (newest first) and each version's
//     platforms, with the archive's size, the hashes its <version>.json
//     lists (zh: and h1:), a relative link to the archive, and the key that
//     signed the release (the key ID of its provenance record, "unsigned"
//     when the origin published no keys); and a link to each package's SBOM
//     with the Go version its executable was built with ("no build
//     information" for one that is not a Go program, "no SBOM" for a
//     package published before tfmirror made SBOMs), as the provenance
//     record names them, and the package's known vulnerabilities as
//     builds with a vulnerability database recorded them
//     (layout.VulnerabilitiesPath); for each provider, the warnings its
//     registry gave of it (a deprecation) and the primary keys that
//     signed its releases, a key change marked with the version that
//     first had the new key and both fingerprints, as catalog.json says
//     them (layout.Tree.DescribeCatalog, which callers run first:
//     views.Refresh does);
//   - every module package, its versions, each package's size and SHA-256,
//     the upstream location and commit (or the upstream archive's SHA-256)
//     from the module record, and a relative link to the package;
//   - the client configuration to copy: the provider_installation block
//     with a network_mirror pointing at the mirror, and the host blocks
//     (internal/replica's ServicesBlock) for the registry replicas the
//     tree holds: modules.v1 where a module's versions document is there,
//     providers.v1 where a provider's is (a build with --registry-replica).
//
// Everything is read through layout.Tree's typed reads, and every string
// from the tree (provider and module addresses, key IDs, file names,
// hashes, upstream locations) is treated as hostile and escaped by
// html/template. A Content-Security-Policy meta element allows only the
// page's own inline style and script (by hash) and requests to its own
// origin, so even markup that escaped escaping could run nothing.
//
// # Determinism
//
// tfmirror promises byte-identical trees for the same inputs, and the same
// objects in a bucket as in a directory. The page's bytes are therefore a
// function of the tree's content (and Options) only: it holds no clock
// reading ("generated at") and, by default, no file times, its order is
// fixed (addresses sorted, versions newest first, platforms and hashes
// sorted), and Write rewrites index.html only when those bytes change, so
// a build that changes nothing leaves it alone.
//
// When a version was mirrored is not content: no record in the tree holds
// a time (module records leave it out on purpose), only the store's
// metadata does (layout.FileInfo.ModTime of the <version>.json or module
// record; a file's mtime, an object's Last-Modified). Writing those times
// into the page, or into a side file, would make two builds of the same
// inputs (or a directory and a bucket) differ by the second they ran. So
// the page asks the store itself: each version's "mirrored" cell names its
// document, and a few lines of script send HEAD for it and show its
// Last-Modified: the same FileInfo.ModTime, as the host that serves the
// tree reports it (a mirror of more than 100 versions asks only for the
// rows scrolled into view, so nobody's browser sends thousands of
// requests). That needs JavaScript and HTTP(S); opened from file:// or
// without script the cell shows a dash, and everything else on the page
// works the same.
// Options.EmbedTimes is for those who want the times in the page itself
// (to read it from file://, say): Write then reads them with Stat and
// writes them in, and the page is still the same for the same tree state
// (writing twice gives the same bytes), but no longer the same for two
// trees built at different times.
//
// # Size
//
// A huge mirror must not give a page the browser chokes on. The newest
// Options.Detailed versions of each provider and module (DefaultDetailed
// unless set) are shown in full; older ones are listed compactly (version,
// platforms, key, links to their documents, which hold the hashes) inside
// a collapsed details element, so the page grows with the number of
// versions by one short row each, not by their platforms and hashes.
//
// The package does not decide what is mirrored, verify anything (tfmirror
// verify does) or serve the page; it does not wire itself into the build:
// callers call Write after everything else has been published, the
// registry replica included, since the page describes the replica's host
// blocks.
package htmlcatalog

// Package s3store is the S3 adapter of layout's destination seam: a
// layout.Store, and so a layout.Reader, over a bucket and prefix of Amazon
// S3 or an S3-compatible object store (MinIO, Ceph, versitygw, R2, ...),
// named by a URI s3://BUCKET/PREFIX/.
//
// It owns:
//   - the s3:// URI and the mapping of a tree's relative paths to object
//     keys under the prefix;
//   - the client's configuration, derived from the environment the CLI
//     passes in Config.Environ (credentials, region, endpoint, CA bundle,
//     checksums, retries; see Config);
//   - how an object is written: one PutObject, or a multipart upload
//     streamed from the file with bounded concurrency and memory, each
//     with the Content-Type clients need, a Cache-Control policy and the
//     content's SHA-256 in the object's metadata (so Stat answers it
//     without a download);
//   - conditional writes (layout.Conditional: If-Match on the ETag,
//     If-None-Match: * for new objects), with which several builds
//     publish into one prefix at once, and the check that the store
//     enforces them: before its first write into a bucket a process
//     probes, under the private directory, that the store refuses both
//     conditional writes that must fail, and refuses to write into a
//     store that does not (ErrConditionsIgnored, probe.go);
//   - the store's locks, lease objects under layout.PrivateDirName
//     written with conditional requests: a lease per publishing writer,
//     taken at its first write, and the exclusive lock of prune (see
//     lock.go);
//   - the bounds on what the store may send (bounds.go): every paginated
//     listing stops at MaxListPages pages and MaxListObjects objects
//     (ErrListTooLong), a listing page's answer at DefaultMaxListPageBytes
//     and any other answer but an object's content at 1 MiB
//     (ErrAnswerTooLarge); every request has the time bounds of downloads
//     (Config.Net: connect and header timeouts, and the stall and speed
//     limits on every body, objects included); and every error quotes the
//     store's answer bounded and escaped (package excerpt).
//
// It does not know which files a mirror tree holds, what they mean, or in
// which order they must become visible: package layout decides that
// (Tree.PublishAll issues a Put only once every Put it must follow has
// returned, the files of one kind several at a time, at most 8 in
// flight; Tree.PutArchiveAhead writes an archive no document lists yet),
// and
// this package only makes each Put atomic and durable, as the
// layout.Store contract requires.
package s3store

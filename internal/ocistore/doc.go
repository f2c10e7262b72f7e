// Package ocistore is the OCI adapter of tfmirror's destinations: it
// publishes provider releases into OCI registries in exactly the shape
// OpenTofu's oci_mirror installation method reads (OpenTofu 1.10 and
// later), and reads them back. A destination is named by
// "oci://TEMPLATE", where TEMPLATE is OpenTofu's repository_template
// (e.g. "registry.example.com/tf/${hostname}/${namespace}/${type}"), or by
// "oci-layout://DIR", an OCI image layout per repository on disk for
// carrying into an air gap (DIR/<hostname>/<namespace>/<type>, readable by
// skopeo's oci: transport and oras --oci-layout).
//
// It owns:
//   - the repository template and the mapping of a provider to its
//     repository, and of a version to its tag (+ becomes _);
//   - the artifacts: per version an image index (artifactType
//     application/vnd.opentofu.provider) under the version's tag, one
//     image manifest per platform (artifactType
//     application/vnd.opentofu.provider-target, the OCI empty config, the
//     byte-identical upstream zip as the single archive/zip layer), and a
//     provenance artifact referring to the index (the upstream SHA256SUMS,
//     its signature and the provenance record with the signing keys), and
//     per platform the package's SBOM as a referrer of its manifest
//     (artifactType application/vnd.cyclonedx+json, pushed after the
//     manifest and before the provenance record that names it);
//     built deterministically, so the same release gives the same digests
//     on every run and machine;
//   - how a release is pushed: blobs, then platform manifests, then the
//     index by digest, then the provenance artifact referring to it, and
//     the tag last (in a layout, the tag and the provenance in one
//     index.json write), so no tag ever names an index without its
//     provenance; what the
//     repository already holds is found (HEAD, or read while planning)
//     and never uploaded again; the index merges the platforms already
//     under the tag; a tag whose package for a platform differs is
//     refused (a layout.ConflictError) unless the caller asks for an
//     overwrite; an archive of a version not yet tagged may go up ahead
//     of its push (PushArchiveAhead), as a blob nothing names until then;
//   - the registry client: oras-go's remote repository with its auth
//     client (Docker-style config files and credential helpers, explicit
//     credentials from the environment, per-repository token scopes,
//     credentials never sent to another origin on a redirect, nor to a
//     token realm on another host or port than the registry's unless
//     Config.TokenRealms names it for the registry), httpx's
//     transport (TLS trust from SSL_CERT_FILE, proxies,
//     connect and header timeouts), retries, and errors that say what
//     went wrong (401, 403, an unreachable registry, an untrusted
//     certificate, refused media types) and name the provider, version
//     and repository, quoting what the registry said bounded and escaped
//     (package excerpt);
//   - the bounds on what a registry may send (bounds.go): a tag list stops
//     at Config.MaxTags tags and a listing at Config.MaxListPages pages
//     (ErrListTooLong), a manifest is refused before it is read when its
//     descriptor says more than MaxManifestBytes (and never read past its
//     descriptor's size), and every body, blobs and manifests included,
//     has the stall and speed limits of downloads (Config.StallTimeout,
//     SpeedLimit, SpeedTime) besides the connect and header timeouts;
//   - reading a registry or layout filled without tfmirror (with oras, as
//     OpenTofu's documentation shows) as an upstream of hashes only
//     (Hashed, a mirror.HashedPackages): each platform's layer digest is
//     the package's zh: hash, a layer size of 0 or more than the most a
//     download may bring is refused, and the package is checked against
//     its layer's size and digest as it is read;
//   - the OCI image layout: blobs through oras-go's content/oci storage,
//     index.json written by this package atomically and in a stable
//     order, under a file lock (atomicfile.Lock on oci-layout) that waits
//     for another process's update only as long as the push's context
//     and layoutLockWait allow.
//
// It does not decide what to publish, does not download or verify
// packages (the caller hands it verified, staged archives and the
// release's record), and does not judge signatures: mirror does that,
// also for what ReadRecord returns. It knows nothing of the CLI.
package ocistore

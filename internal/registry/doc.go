// Package registry is a client for the provider registry protocol (v1): it
// discovers a host's providers.v1 service (or takes it from a configured
// host block), lists versions, reads download metadata and fetches the
// files it points to. It implements mirror.Source; the files are
// mirror.Locations over HTTP (package httploc) that also tell their size and
// whether they come over plain http.
//
// It checks the shape of what registries send (every value parsed with a
// guarded parser, so no document can panic it), resolves every URL
// relative to the document that named it, and attaches credentials only to
// requests that go to the registry API (and discovery), never to archive or
// checksum downloads; those requests go over https only and lose the token
// on a redirect to another origin. The URLs of a download document are
// locations the provider's registry names: held to the location rule
// (httpx.Locations, Config.Locations) before anything is fetched, so one
// off the registry's own origin is refused over plain http or on a
// loopback or private address unless the manifest allows its host, and
// fetched under it (redirects included). A module download location is
// returned with who named it (mirror.ModuleLocation); its fetcher holds
// it to the same rule. URLs appear in errors, and as the
// locations' String, only as httpx.Redact shows them. Every document is
// bounded before it is parsed: by size (maxVersionsBytes,
// maxDownloadBytes, through httpx's Document) and, for versions
// documents, by what they list (maxVersions versions, maxPlatforms
// platforms a version, maxModules modules), refused while decoding; an
// error quotes what a registry sent only as an excerpt (package excerpt:
// at most 200 bytes, control characters escaped). It reads the
// package size OpenTofu 1.12 registries announce (the "packages" field)
// into mirror.PackageMeta. It does not verify signatures or checksums:
// that is package mirror's job. API calls and downloads are retried as
// the httpx.Fetcher it is given says; service discovery is left to
// svchost/disco and its own client.
package registry

// Package registry is a client for the provider registry protocol (v1): it
// discovers a host's providers.v1 service (or takes it from a configured
// host block), lists versions, reads download metadata and fetches the
// files it points to. It implements mirror.Source.
//
// It checks the shape of what registries send, resolves every URL relative
// to the document that named it, and attaches credentials only to requests
// that go to the registry API, never to archive or checksum downloads. It
// does not verify signatures or checksums: that is package mirror's job.
// API calls and downloads are retried as the httpx.Fetcher it is given
// says; service discovery is left to svchost/disco and its own client.
package registry

package ocistore

// Bounds of the listings a registry answers, chosen so that no real
// repository comes near them while no hostile or broken registry can
// keep a command listing without end:
//
//   - DefaultMaxTags (100,000 tags in one repository): a provider's
//     repository holds a tag per version, and on a registry without the
//     referrers API one more per version for its provenance; the largest
//     providers have about 1,000 versions.
//   - DefaultMaxListPages (10,000 pages of one listing): registries
//     answer 100 to 1,000 tags a page, so 100,000 tags are at most 1,000
//     pages; a list that goes on with tiny pages is stopped after 10,000
//     requests.
//   - maxReferrers (1,000 referrers of one manifest): a version's index
//     has one provenance artifact, and perhaps a few signatures.
//
// Each page of a listing is at most oras's MaxMetadataBytes (4 MiB), and
// each manifest MaxManifestBytes, checked before it is read.
const (
	DefaultMaxTags      = 100_000
	DefaultMaxListPages = 10_000
	maxReferrers        = 1_000
)

func (s *Store) maxTags() int {
	if s.cfg.MaxTags > 0 {
		return s.cfg.MaxTags
	}
	return DefaultMaxTags
}

func (s *Store) maxListPages() int {
	if s.cfg.MaxListPages > 0 {
		return s.cfg.MaxListPages
	}
	return DefaultMaxListPages
}

package mirror

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// Source is an origin of provider packages, such as a registry speaking the
// provider registry protocol. It lists and describes packages; their
// documents are fetched from the locations PackageMeta gives.
type Source interface {
	// AvailableVersions lists every version the origin offers. It returns an
	// error wrapping ErrProviderUnknown when the origin does not know p.
	AvailableVersions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error)
	// PackageMeta describes one package. It returns an error wrapping
	// ErrPlatformUnavailable when the release has no such platform.
	PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error)
}

// PlatformLister is a Source whose version list also says which platforms
// each release publishes, as a provider registry's does. A build lists
// versions through it, and refuses, before any download, a platform that
// no selected release publishes (Builder.Plan).
type PlatformLister interface {
	// AvailableReleases lists every version the origin offers, as
	// AvailableVersions does, each with the platforms the list names for
	// it: none when it names none (unknown, not empty).
	AvailableReleases(ctx context.Context, p addrs.Provider) ([]ListedRelease, error)
}

// WarningLister is a Source whose version list has a place for what the
// registry says of a provider as a whole (the provider registry
// protocol's "warnings": a deprecation, say). A build lists versions
// through it when it can, reports the warnings and keeps them.
type WarningLister interface {
	// ProviderListing lists every version the origin offers, as
	// PlatformLister does, with the list's warnings.
	ProviderListing(ctx context.Context, p addrs.Provider) (Listing, error)
}

// Listing is a provider's version list: its releases and the origin's
// warnings about the provider.
type Listing struct {
	Releases []ListedRelease
	// Warnings are the origin's warnings about the provider, in its
	// order; none when it sends none.
	Warnings []string
	// CanWarn says the list has a place for warnings: without it (a
	// network mirror's list) no warnings says nothing.
	CanWarn bool
}

// ListedRelease is a version as a version list names it, with its
// platforms.
type ListedRelease struct {
	Version   addrs.Version
	Platforms []addrs.Platform
}

// ErrProviderUnknown means the origin does not know the provider.
var ErrProviderUnknown = errors.New("the registry does not know this provider")

// ErrPlatformUnavailable means a release does not include a platform.
var ErrPlatformUnavailable = errors.New("release has no package for this platform")

// PackageMeta is what an origin says about one package: what it is, where
// its documents are, and what vouches for it. Its locations show
// themselves (String) and their errors name them without a secret.
type PackageMeta struct {
	Filename    string   // the name SHA256SUMS lists the archive under
	Archive     Location // the package's zip archive
	Sums        Location // the release's SHA256SUMS document
	Signature   Location // its binary detached OpenPGP signature
	SHA256      [sha256.Size]byte
	SigningKeys []string // ASCII-armored public keys allowed to sign SHA256SUMS
	// Size is the archive's length in bytes as the origin announced it
	// (OpenTofu 1.12's "packages" field), 0 when it did not. A download
	// that grows past it is refused as it arrives.
	Size int64
	// HashesOnly names the upstream, when it vouches for the package with
	// hashes alone (a mirror that keeps no signature). Sums is then the
	// kept SHA256SUMS made from the archives' digests, or nil, and there
	// are no Signature and no SigningKeys.
	HashesOnly string
	// H1 are the h1: hashes the upstream lists for the package; a download
	// must unpack to one of them. When SHA256 is zero (the upstream listed
	// no zh:), they are all that checks the archive.
	H1 []hashing.Hash
	// Catalog is the upstream's signed catalog.json that listed the
	// package, if one did (SignedCatalog).
	Catalog *layout.CatalogVouch
}

// digestKnown reports whether the upstream promised the archive's SHA-256.
func (m PackageMeta) digestKnown() bool { return m.SHA256 != [sha256.Size]byte{} }

// SignatureChecker verifies a detached OpenPGP signature over a document
// against ASCII-armored public keys.
type SignatureChecker interface {
	CheckSignature(doc, sig []byte, armoredKeys []string) (Signer, error)
}

// Signer identifies the key that verified a release.
type Signer struct {
	KeyID       string // 16 uppercase hex digits
	Fingerprint string // 40 uppercase hex digits
	Expired     bool
	// Expires is when the key (by its newest self-signature) or the
	// signature stops being current, the earliest; zero when never or
	// not known.
	Expires time.Time
	// Created is when the primary key was made; zero when not known.
	Created time.Time
}

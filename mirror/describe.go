package mirror

import (
	"github.com/tfmirror/tfmirror/hashing"
)

// Description is what a build knows of a package it verified, for its
// SBOM: the package, its hashes, what its executable says it was built
// from, and the evidence that authenticated it.
type Description struct {
	Package  Package
	Filename string       // the archive's name in the upstream SHA256SUMS
	ZH, H1   hashing.Hash // the archive's zh:, the unpacked package's h1:
	Program  hashing.Program
	// Origin names where the package came from: the upstream whose
	// hashes alone vouched for it, else the provider's registry host.
	// It never holds a secret.
	Origin string
	// KeyID is the OpenPGP key that signed its SHA256SUMS; "" if none.
	KeyID string
}

// Describer turns the description of a verified package into the bytes of
// its SBOM (the command layer's choice of format), the same bytes for the
// same description. An error fails the package.
type Describer func(Description) ([]byte, error)

// description describes a package authenticated by a and hashed to sums.
func description(a authenticated, sums hashing.ArchiveSums) Description {
	origin := a.origin.hashesOnly
	if origin == "" {
		origin = a.pkg.Provider.Hostname.ForDisplay()
	}
	return Description{
		Package:  a.pkg,
		Filename: a.meta.Filename,
		ZH:       sums.ZH,
		H1:       sums.H1Unpacked,
		Program:  sums.Program,
		Origin:   origin,
		KeyID:    a.origin.signer.KeyID,
	}
}

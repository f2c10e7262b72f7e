package sbom

import (
	"fmt"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Describe is the build's mirror.Describer: the SBOM of a package it
// verified.
func Describe(d mirror.Description) ([]byte, error) {
	return Encode(Package{
		Provider:   d.Package.Provider.String(),
		Version:    d.Package.Version.String(),
		Platform:   d.Package.Platform.String(),
		Filename:   d.Filename,
		ZH:         string(d.ZH),
		H1:         string(d.H1),
		Executable: d.Program.Executable,
		Build:      d.Program.Info,
		Origin:     d.Origin,
		KeyID:      d.KeyID,
	})
}

// Check is verify's mirror.SBOMChecker: a package's SBOM must be a
// CycloneDX document of that package, naming the archive and the h1:
// the mirror records for it.
func Check(pkg mirror.Package, entry layout.ProvenanceArchive, data []byte) error {
	_, err := DecodeChecked(pkg, entry, data)
	return err
}

// DecodeChecked is Check that returns what the SBOM says, decoded once:
// what tfmirror audit matches.
func DecodeChecked(pkg mirror.Package, entry layout.ProvenanceArchive, data []byte) (Contents, error) {
	if !looksLikeJSONObject(data) {
		return Contents{}, fmt.Errorf("not a CycloneDX JSON document")
	}
	c, err := Decode(data)
	if err != nil {
		return Contents{}, err
	}
	switch {
	case c.Provider != pkg.Provider.String() || c.Version != pkg.Version.String() || c.Platform != pkg.Platform.String():
		return Contents{}, fmt.Errorf("it describes %s %s %s, not this package", excerpt.Quote(c.Provider), excerpt.Quote(c.Version), excerpt.Quote(c.Platform))
	case c.Filename != entry.Filename:
		return Contents{}, fmt.Errorf("it names the archive %s, the provenance %s", excerpt.Quote(c.Filename), excerpt.Quote(entry.Filename))
	case c.H1 != string(entry.H1):
		return Contents{}, fmt.Errorf("it records %s, the provenance %s", excerpt.Quote(c.H1), entry.H1)
	case c.HasBuild != (entry.GoVersion != "") || c.GoVersion != entry.GoVersion:
		return Contents{}, fmt.Errorf("its build information (Go %s) is not what the provenance records (Go %s)", excerpt.Quote(c.GoVersion), excerpt.Quote(entry.GoVersion))
	}
	return c, nil
}

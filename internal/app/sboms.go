package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/internal/vulndb"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// SBOMStatus is what the SBOM a mirror holds of a package says of its
// known vulnerabilities.
type SBOMStatus string

// The outcomes of matching a package's SBOM.
const (
	SBOMClean      SBOMStatus = "clean"                // no known vulnerability
	SBOMVulnerable SBOMStatus = "vulnerable"           // known vulnerabilities
	SBOMNone       SBOMStatus = "no_sbom"              // published without an SBOM
	SBOMNoBuild    SBOMStatus = "no_build_information" // not a Go program
	SBOMBad        SBOMStatus = "bad_sbom"             // its SBOM is missing or not its own
)

// SBOMFindings is what matching one package's SBOM found.
type SBOMFindings struct {
	Platform   addrs.Platform
	Status     SBOMStatus
	Advisories []mirror.Advisory
	// Problem says what is wrong with a bad SBOM.
	Problem string
}

// Matched says the package's SBOM was matched: its findings (none for a
// program without build information) are current for the database.
func (f SBOMFindings) Matched() bool {
	return f.Status == SBOMClean || f.Status == SBOMVulnerable || f.Status == SBOMNoBuild
}

// sbomTree is a mirror that reads a release's provenance once and each
// package's SBOM by the entry it has (a tree); others read the SBOM of a
// package by itself (a registry).
type sbomTree interface {
	ReadProvenance(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Provenance, error)
	ReadSBOMOf(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform, entry layout.ProvenanceArchive) ([]byte, error)
}

// MatchSBOMs reads the SBOMs m holds of the packages plats of p v and
// matches what they say against db, in the order of plats: the one
// reading of a built mirror's SBOMs, for tfmirror audit and for the
// packages a build keeps. Each SBOM is checked against the release's
// provenance (sbom.DecodeChecked: the package, archive, h1: and Go
// version it names) before it is matched; one that fails is bad_sbom,
// not an error. The error is the mirror's (the provenance cannot be
// read) or the database's.
func MatchSBOMs(ctx context.Context, m mirror.Packages, db vulndb.Matcher, p addrs.Provider, v addrs.Version, plats []addrs.Platform) ([]SBOMFindings, error) {
	prov, read, err := provenanceOf(ctx, m, p, v)
	if err != nil {
		return nil, err
	}
	out := make([]SBOMFindings, len(plats))
	for i, plat := range plats {
		entry := prov.Archives[plat.String()]
		out[i] = SBOMFindings{Platform: plat, Status: SBOMNone}
		if entry.SBOM == "" {
			continue
		}
		data, err := read(ctx, plat, entry)
		if err != nil {
			out[i].Status, out[i].Problem = SBOMBad, fmt.Sprintf("the SBOM %s: %v", entry.SBOM, err)
			continue
		}
		if out[i], err = matchSBOM(ctx, db, mirror.Package{Provider: p, Version: v, Platform: plat}, entry, data); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sbomReader reads the SBOM a package's provenance entry names.
type sbomReader func(ctx context.Context, plat addrs.Platform, entry layout.ProvenanceArchive) ([]byte, error)

// provenanceOf reads a release's provenance, once, and how to read its
// packages' SBOMs; a release without one has none.
func provenanceOf(ctx context.Context, m mirror.Packages, p addrs.Provider, v addrs.Version) (layout.Provenance, sbomReader, error) {
	var prov layout.Provenance
	var err error
	read := func(ctx context.Context, plat addrs.Platform, _ layout.ProvenanceArchive) ([]byte, error) {
		return m.ReadSBOM(ctx, p, v, plat)
	}
	if t, ok := m.(sbomTree); ok {
		prov, err = t.ReadProvenance(ctx, p, v)
		read = func(ctx context.Context, plat addrs.Platform, entry layout.ProvenanceArchive) ([]byte, error) {
			return t.ReadSBOMOf(ctx, p, v, plat, entry)
		}
	} else {
		var rec layout.Record
		rec, err = m.ReadRecord(ctx, p, v)
		prov = rec.Provenance
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return prov, nil, fmt.Errorf("read the provenance of %s %s: %w", p, v, err)
	}
	return prov, read, nil
}

// matchSBOM checks one package's SBOM and matches what it says.
func matchSBOM(ctx context.Context, db vulndb.Matcher, pkg mirror.Package, entry layout.ProvenanceArchive, data []byte) (SBOMFindings, error) {
	out := SBOMFindings{Platform: pkg.Platform}
	c, err := sbom.DecodeChecked(pkg, entry, data)
	switch {
	case err != nil:
		out.Status, out.Problem = SBOMBad, fmt.Sprintf("the SBOM %s: %v", entry.SBOM, err)
		return out, nil
	case !c.HasBuild:
		out.Status = SBOMNoBuild
		return out, nil
	}
	findings, err := db.Match(ctx, sbomProgram(c, pkg.Platform))
	if err != nil {
		return out, fmt.Errorf("match the SBOM of %s: %w", pkg, err)
	}
	out.Status, out.Advisories = SBOMClean, Advisories(findings)
	if len(out.Advisories) > 0 {
		out.Status = SBOMVulnerable
	}
	return out, nil
}

// sbomProgram is what the SBOM says the package was built from, as the
// build matches it: the dependencies (not the main module), the Go
// version, the package's platform.
func sbomProgram(c sbom.Contents, plat addrs.Platform) vulndb.Program {
	p := vulndb.Program{GoVersion: c.GoVersion, GOOS: plat.OS, GOARCH: plat.Arch}
	for _, m := range c.Modules {
		if !m.Main {
			p.Modules = append(p.Modules, vulndb.Module{Path: m.Path, Version: m.Version})
		}
	}
	return p
}

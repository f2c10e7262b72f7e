package sbom

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Contents is what an SBOM says a package was built from, as a
// vulnerability report needs it.
type Contents struct {
	Provider, Version, Platform, Filename string
	H1                                    string // the unpacked package's h1:
	// HasBuild says the package's executable had build information;
	// then GoVersion is its toolchain and Modules its main module and
	// dependencies, as built.
	HasBuild  bool
	GoVersion string
	Modules   []Module
}

// Module is one Go module a program was built from.
type Module struct {
	Path, Version string
	// Main says it is the program's main module, not a dependency.
	Main bool
}

// Decode reads an SBOM Encode wrote (or any CycloneDX JSON that lists
// Go modules by package URL). The caller bounds its size.
func Decode(data []byte) (Contents, error) {
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return Contents{}, fmt.Errorf("parse SBOM: %w", err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		return Contents{}, fmt.Errorf("parse SBOM: it names no package")
	}
	subj := bom.Metadata.Component
	c := Contents{Provider: subj.Name, Version: subj.Version, HasBuild: true}
	for _, p := range props(subj.Properties) {
		switch p.Name {
		case propPlatform:
			c.Platform = p.Value
		case propFilename:
			c.Filename = p.Value
		case propH1:
			c.H1 = p.Value
		case propBuildInfo:
			c.HasBuild = p.Value != NoBuildInfo
		}
	}
	if bom.Components == nil {
		return c, nil
	}
	for _, comp := range *bom.Components {
		path, version, ok := golangPURL(comp.PackageURL)
		switch {
		case !ok:
		case path == "stdlib":
			c.GoVersion = version
		default:
			c.Modules = append(c.Modules, Module{Path: path, Version: version, Main: comp.Type == cdx.ComponentTypeApplication})
		}
	}
	return c, nil
}

func props(p *[]cdx.Property) []cdx.Property {
	if p == nil {
		return nil
	}
	return *p
}

// golangPURL splits pkg:golang/PATH@VERSION.
func golangPURL(purl string) (path, version string, ok bool) {
	rest, ok := strings.CutPrefix(purl, "pkg:golang/")
	if !ok {
		return "", "", false
	}
	at := strings.LastIndex(rest, "@")
	if at <= 0 {
		return "", "", false
	}
	version, err := url.PathUnescape(rest[at+1:])
	if err != nil || version == "" {
		return "", "", false
	}
	return rest[:at], version, true
}

// Package sbom writes and reads the software bill of materials tfmirror
// keeps beside each provider package: a CycloneDX JSON document made from
// the Go build information of the package's executable (the modules it
// was built from, with versions and sums, the Go toolchain and the build
// settings), the package's hashes and where it came from.
//
// It owns the document's shape and its bytes, which depend only on what
// they describe (no timestamp, a serial number derived from the
// content), so rebuilding a mirror gives the same files. It does not read
// archives (hashing finds the build information while it hashes), decide
// where a document is published (layout and the destinations do), or
// match advisories.
package sbom

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"runtime/debug"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// Package is what an SBOM describes: one platform's package of a provider
// release.
type Package struct {
	Provider string // source address, registry.opentofu.org/hashicorp/aws
	Version  string
	Platform string // os_arch
	Filename string // the archive's name
	ZH, H1   string // its hashes, zh: and h1:
	// Executable is the archive's program entry; Build its Go build
	// information, nil when it has none.
	Executable string
	Build      *debug.BuildInfo
	// Origin names where the archive came from (a registry host or an
	// upstream mirror's location, never a secret); KeyID the OpenPGP key
	// that signed its SHA256SUMS, "" when none did.
	Origin string
	KeyID  string
}

// Property names of the document, in tfmirror's namespace.
const (
	propPlatform   = "tfmirror:platform"
	propFilename   = "tfmirror:filename"
	propH1         = "tfmirror:h1"
	propOrigin     = "tfmirror:origin"
	propKeyID      = "tfmirror:signing_key"
	propExecutable = "tfmirror:executable"
	propBuildInfo  = "tfmirror:build_information"
	propGoSum      = "tfmirror:go:sum"
	propReplaces   = "tfmirror:go:replaces"
	propSetting    = "tfmirror:go:build:"
	// NoBuildInfo is the build_information property of a package whose
	// executable is not a Go program tfmirror can read.
	NoBuildInfo = "none"
)

// Encode returns the package's SBOM: CycloneDX 1.6 JSON, the same bytes
// for the same package.
func Encode(p Package) ([]byte, error) {
	bom := cdx.NewBOM()
	bom.SerialNumber = serial(p)
	bom.Metadata = &cdx.Metadata{
		Tools:     &cdx.ToolsChoice{Components: &[]cdx.Component{{Type: cdx.ComponentTypeApplication, Name: "tfmirror"}}},
		Component: subject(p),
	}
	if p.Build != nil {
		comps, deps := modules(p)
		bom.Components = &comps
		bom.Dependencies = &deps
	}
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).SetEscapeHTML(false)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("encode the SBOM of %s %s %s: %w", p.Provider, p.Version, p.Platform, err)
	}
	return buf.Bytes(), nil
}

// serial is a UUID (version 5 in form) derived from what the document
// describes, so that it is stable and unique per package.
func serial(p Package) string {
	sum := sha256.Sum256([]byte(strings.Join([]string{p.Provider, p.Version, p.Platform, p.ZH}, "\n")))
	u := sum[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u)
	return "urn:uuid:" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// subject is the package itself.
func subject(p Package) *cdx.Component {
	props := []cdx.Property{
		{Name: propPlatform, Value: p.Platform},
		{Name: propFilename, Value: p.Filename},
		{Name: propH1, Value: p.H1},
	}
	if p.Origin != "" {
		props = append(props, cdx.Property{Name: propOrigin, Value: p.Origin})
	}
	if p.KeyID != "" {
		props = append(props, cdx.Property{Name: propKeyID, Value: p.KeyID})
	}
	if p.Executable != "" {
		props = append(props, cdx.Property{Name: propExecutable, Value: p.Executable})
	}
	if p.Build == nil {
		props = append(props, cdx.Property{Name: propBuildInfo, Value: NoBuildInfo})
	}
	c := &cdx.Component{
		BOMRef:     "package",
		Type:       cdx.ComponentTypeApplication,
		Name:       p.Provider,
		Version:    p.Version,
		Properties: &props,
	}
	if zh, ok := strings.CutPrefix(p.ZH, "zh:"); ok {
		c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: zh}}
	}
	return c
}

// modules lists the Go toolchain, the main module and every dependency,
// each a component the package depends on.
func modules(p Package) ([]cdx.Component, []cdx.Dependency) {
	b := p.Build
	comps := []cdx.Component{goComponent(b)}
	main := moduleComponent(&b.Main, cdx.ComponentTypeApplication)
	if main.Name == "" {
		main.Name, main.BOMRef = b.Path, "main"
	}
	settings := props(main.Properties)
	for _, s := range b.Settings {
		settings = append(settings, cdx.Property{Name: propSetting + s.Key, Value: s.Value})
	}
	if len(settings) > 0 {
		main.Properties = &settings
	}
	comps = append(comps, main)
	refs := []string{comps[0].BOMRef, main.BOMRef}
	var deps []string
	for _, m := range b.Deps {
		c := moduleComponent(m, cdx.ComponentTypeLibrary)
		comps = append(comps, c)
		deps = append(deps, c.BOMRef)
	}
	graph := []cdx.Dependency{
		{Ref: "package", Dependencies: &refs},
		{Ref: main.BOMRef, Dependencies: &deps},
	}
	return comps, graph
}

func goComponent(b *debug.BuildInfo) cdx.Component {
	return cdx.Component{
		BOMRef:     "go",
		Type:       cdx.ComponentTypePlatform,
		Name:       "go",
		Version:    b.GoVersion,
		PackageURL: "pkg:golang/stdlib@" + b.GoVersion,
	}
}

// moduleComponent describes a module as built: a replaced module by its
// replacement, with what it replaces as a property.
func moduleComponent(m *debug.Module, kind cdx.ComponentType) cdx.Component {
	used := m
	props := []cdx.Property{}
	if m.Replace != nil {
		used = m.Replace
		props = append(props, cdx.Property{Name: propReplaces, Value: modRef(m)})
	}
	if used.Sum != "" {
		props = append(props, cdx.Property{Name: propGoSum, Value: used.Sum})
	}
	c := cdx.Component{
		BOMRef:     modRef(m),
		Type:       kind,
		Name:       used.Path,
		Version:    used.Version,
		PackageURL: purl(used),
	}
	if len(props) > 0 {
		c.Properties = &props
	}
	return c
}

func modRef(m *debug.Module) string { return m.Path + "@" + m.Version }

// purl is a module's package URL; a local replacement has none.
func purl(m *debug.Module) string {
	if m.Path == "" || m.Version == "" || m.Version == "(devel)" || strings.HasPrefix(m.Path, ".") || strings.HasPrefix(m.Path, "/") {
		return ""
	}
	return "pkg:golang/" + m.Path + "@" + url.PathEscape(m.Version)
}

func props(p *[]cdx.Property) []cdx.Property {
	if p == nil {
		return nil
	}
	return *p
}

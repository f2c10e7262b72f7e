package sbom

import (
	"bytes"
	"encoding/json"
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

// document is the part of a CycloneDX JSON document Decode reads: the
// subject's name, version and properties, and each component's type and
// package URL. Everything else (hashes, dependencies, the build settings'
// properties) is skipped by the JSON scanner without being built, which
// is most of what a full decode of a real provider's SBOM costs.
type document struct {
	Metadata *struct {
		Component *struct {
			Name       string     `json:"name"`
			Version    string     `json:"version"`
			Properties []property `json:"properties"`
		} `json:"component"`
	} `json:"metadata"`
	Components []struct {
		Type string `json:"type"`
		PURL string `json:"purl"`
	} `json:"components"`
}

type property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Decode reads an SBOM Encode wrote (or any CycloneDX JSON that lists
// Go modules by package URL). The caller bounds its size.
func Decode(data []byte) (Contents, error) {
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return Contents{}, fmt.Errorf("parse SBOM: %w", err)
	}
	if doc.Metadata == nil || doc.Metadata.Component == nil {
		return Contents{}, fmt.Errorf("parse SBOM: it names no package")
	}
	subj := doc.Metadata.Component
	c := Contents{Provider: subj.Name, Version: subj.Version, HasBuild: true}
	for _, p := range subj.Properties {
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
	for _, comp := range doc.Components {
		path, version, ok := golangPURL(comp.PURL)
		switch {
		case !ok:
		case path == "stdlib":
			c.GoVersion = version
		default:
			c.Modules = append(c.Modules, Module{Path: path, Version: version, Main: comp.Type == string(cdx.ComponentTypeApplication)})
		}
	}
	return c, nil
}

// looksLikeJSONObject is the first test of a document that should be an
// SBOM: a JSON object.
func looksLikeJSONObject(data []byte) bool {
	return len(data) > 0 && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
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

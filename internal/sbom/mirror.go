package sbom

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
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
//
// With the program read from the archive, the modules it lists must be
// the ones the executable's build information names: an SBOM edited to
// leave a vulnerable module out (which would hide its advisories from
// audit) is refused.
func Check(pkg mirror.Package, entry layout.ProvenanceArchive, data []byte, program hashing.Program) error {
	c, err := DecodeChecked(pkg, entry, data)
	if err != nil || program.Info == nil {
		return err
	}
	if c.GoVersion != program.Info.GoVersion {
		return fmt.Errorf("it names Go %s, the executable was built with %s", excerpt.Quote(c.GoVersion), excerpt.Quote(program.Info.GoVersion))
	}
	want := builtModules(program.Info)
	got := slices.Clone(c.Modules)
	slices.SortFunc(got, compareModules)
	if !slices.Equal(got, want) {
		return fmt.Errorf("its modules are not the ones the executable was built from (%s)", moduleDiff(got, want))
	}
	return nil
}

// builtModules are the modules an SBOM made from info lists with a package
// URL: the main module and every dependency, each as built (a replaced one
// by its replacement), sorted.
func builtModules(info *debug.BuildInfo) []Module {
	var out []Module
	add := func(m *debug.Module, main bool) {
		used := m
		if m.Replace != nil {
			used = m.Replace
		}
		if purl(used) != "" {
			out = append(out, Module{Path: used.Path, Version: used.Version, Main: main})
		}
	}
	add(&info.Main, true)
	for _, m := range info.Deps {
		add(m, false)
	}
	slices.SortFunc(out, compareModules)
	return out
}

func compareModules(a, b Module) int {
	return strings.Compare(a.Path+"@"+a.Version, b.Path+"@"+b.Version)
}

// moduleDiff names the first module one list has and the other lacks.
func moduleDiff(got, want []Module) string {
	for _, m := range want {
		if !slices.Contains(got, m) {
			return "it leaves out " + excerpt.Quote(m.Path+"@"+m.Version)
		}
	}
	for _, m := range got {
		if !slices.Contains(want, m) {
			return "it adds " + excerpt.Quote(m.Path+"@"+m.Version)
		}
	}
	return fmt.Sprintf("%d listed, %d built", len(got), len(want))
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

package sbom

import (
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Describe makes the SBOM of what a build verified, and Check accepts it
// for the package and provenance entry it describes, and nothing else.
func TestDescribeThenCheck(t *testing.T) {
	p := testPackage(t)
	pkg := mirror.Package{
		Provider: addrs.MustParseProvider("hashicorp/aws"), Version: addrs.MustParseVersion(p.Version), Platform: addrs.MustParsePlatform(p.Platform),
	}
	desc := mirror.Description{
		Package: pkg, Filename: p.Filename, ZH: hashing.Hash(p.ZH), H1: hashing.Hash(p.H1),
		Program: hashing.Program{Executable: p.Executable, Info: p.Build}, Origin: p.Origin, KeyID: p.KeyID,
	}
	data, err := Describe(desc)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := Encode(p); string(data) != string(want) {
		t.Fatal("Describe is not Encode of the package described")
	}
	entry := layout.ProvenanceArchive{Filename: p.Filename, H1: hashing.Hash(p.H1), ZH: hashing.Hash(p.ZH), GoVersion: "go1.22.5"}
	program := hashing.Program{Executable: p.Executable, Info: p.Build}
	if err := Check(pkg, entry, data, program); err != nil {
		t.Fatalf("Check of the package's own SBOM: %v", err)
	}
	other := pkg
	other.Platform = addrs.MustParsePlatform("darwin_arm64")
	noGo := entry
	noGo.GoVersion = ""
	otherH1 := entry
	otherH1.H1 = "h1:other="
	for _, c := range []struct {
		name  string
		pkg   mirror.Package
		entry layout.ProvenanceArchive
		data  string
		want  string
	}{
		{"another platform", other, entry, string(data), "not this package"},
		{"another h1", pkg, otherH1, string(data), "h1:other="},
		{"no build information recorded", pkg, noGo, string(data), "build information"},
		{"not JSON", pkg, entry, "<bom/>", "not a CycloneDX JSON document"},
		{"empty", pkg, entry, "", "not a CycloneDX JSON document"},
		{"no subject", pkg, entry, `{"bomFormat":"CycloneDX","specVersion":"1.6"}`, "names no package"},
	} {
		err := Check(c.pkg, c.entry, []byte(c.data), program)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Check = %v; want an error naming %q", c.name, err, c.want)
		}
	}
}

// FuzzCheck: Check reads any bytes a mirror may hold as an SBOM without
// panicking, and accepts only a document naming the package and its h1:.
func FuzzCheck(f *testing.F) {
	pkg := mirror.Package{Provider: addrs.MustParseProvider("hashicorp/aws"), Version: addrs.MustParseVersion("5.0.0"), Platform: addrs.MustParsePlatform("linux_amd64")}
	entry := layout.ProvenanceArchive{Filename: "terraform-provider-aws_5.0.0_linux_amd64.zip", H1: "h1:abc="}
	good, err := Encode(Package{Provider: pkg.Provider.String(), Version: "5.0.0", Platform: "linux_amd64", Filename: entry.Filename, H1: "h1:abc="})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","metadata":{"component":{"name":"x"}}}`))
	f.Add([]byte(`{"components":[{"purl":"pkg:golang/stdlib@go1.22"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if Check(pkg, entry, data, hashing.Program{}) != nil {
			return
		}
		c, err := Decode(data)
		if err != nil || c.Provider != pkg.Provider.String() || c.H1 != string(entry.H1) || c.Platform != "linux_amd64" {
			t.Errorf("Check accepted a document of %q %q %q (%v)", c.Provider, c.Platform, c.H1, err)
		}
	})
}

// An SBOM edited to leave a module out, or to name another version of it
// (hiding its advisories from audit), is not the executable's.
func TestCheckHoldsModulesToTheExecutable(t *testing.T) {
	p := testPackage(t)
	if len(p.Build.Deps) == 0 {
		t.Fatal("the test package has no dependencies")
	}
	pkg := mirror.Package{
		Provider: addrs.MustParseProvider("hashicorp/aws"), Version: addrs.MustParseVersion(p.Version), Platform: addrs.MustParsePlatform(p.Platform),
	}
	entry := layout.ProvenanceArchive{Filename: p.Filename, H1: hashing.Hash(p.H1), ZH: hashing.Hash(p.ZH), GoVersion: p.Build.GoVersion}
	program := hashing.Program{Executable: p.Executable, Info: p.Build}
	dep := p.Build.Deps[0]
	for name, edit := range map[string]func(*debug.BuildInfo){
		"a module left out": func(b *debug.BuildInfo) { b.Deps = b.Deps[1:] },
		"a fixed version": func(b *debug.BuildInfo) {
			d := *b.Deps[0]
			d.Version = "v99.0.0"
			b.Deps = append([]*debug.Module{&d}, b.Deps[1:]...)
		},
	} {
		edited := p
		b := *p.Build
		b.Deps = slices.Clone(p.Build.Deps)
		edit(&b)
		edited.Build = &b
		data, err := Encode(edited)
		if err != nil {
			t.Fatal(err)
		}
		err = Check(pkg, entry, data, program)
		if err == nil || !strings.Contains(err.Error(), "not the ones the executable was built from") || !strings.Contains(err.Error(), dep.Path) {
			t.Errorf("%s: Check = %v; want the module named", name, err)
		}
		if err := Check(pkg, entry, data, hashing.Program{}); err != nil {
			t.Errorf("%s: without the executable's build information, Check = %v", name, err)
		}
	}
}

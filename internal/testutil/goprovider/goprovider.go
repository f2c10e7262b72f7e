// Package goprovider builds, in a test, provider executables that are
// real Go programs (a small main package named like a provider) with
// chosen dependencies at chosen versions from the Go module proxy, for
// chosen platforms, stripped or not, and zips them as a provider release
// with goreleaser's names, ready for fakeregistry.AddArchives. Module
// downloads go to the Go module cache (GOMODCACHE) like the rest of the
// suite's, with GOFLAGS=-mod=mod; compiled packages to the build cache,
// so a second build of the same program only links. Test use only.
package goprovider

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// Module is a module version the program requires.
type Module struct{ Path, Version string }

// Target is a platform to build for ("linux_amd64") and whether its
// executable is stripped (-ldflags=-s -w: no symbol table, no DWARF).
type Target struct {
	Platform string
	Stripped bool
}

// Spec says what to build.
type Spec struct {
	Type, Version string   // the provider's type and version: terraform-provider-TYPE_vVERSION
	Requires      []Module // the go.mod's requirements
	Main          string   // the source of main.go (package main)
	Targets       []Target
}

// Release is what Build made: for each platform, the zip as a registry
// serves it and the executable on disk (in the test's temporary
// directory), the same bytes as the one in the zip.
type Release struct {
	Spec        Spec
	Archives    map[string][]byte
	Executables map[string]string
}

// Build builds s's program for each of its targets and zips each
// executable as a provider package; it fails the test on any error.
func Build(t testing.TB, s Spec) *Release {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	writeSource(t, src, s)
	rel := &Release{Spec: s, Archives: map[string][]byte{}, Executables: map[string]string{}}
	for _, target := range s.Targets {
		exe := filepath.Join(dir, target.Platform, ExecutableName(s.Type, s.Version, target.Platform))
		build(t, src, exe, target)
		body, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(exe)
		rel.Archives[target.Platform] = zipbuild.Bytes(t, zipbuild.Entry{Name: name, Body: string(body), Mode: 0o755})
		rel.Executables[target.Platform] = exe
	}
	return rel
}

// ArchiveName is a package's zip as goreleaser names it:
// terraform-provider-TYPE_VERSION_OS_ARCH.zip.
func ArchiveName(typ, version, platform string) string {
	return "terraform-provider-" + typ + "_" + version + "_" + platform + ".zip"
}

// ExecutableName is the provider executable inside a package:
// terraform-provider-TYPE_vVERSION, with ".exe" on Windows.
func ExecutableName(typ, version, platform string) string {
	name := "terraform-provider-" + typ + "_v" + version
	if strings.HasPrefix(platform, "windows_") {
		name += ".exe"
	}
	return name
}

func writeSource(t testing.TB, src string, s Spec) {
	t.Helper()
	var mod strings.Builder
	fmt.Fprintf(&mod, "module example.test/terraform-provider-%s\n\ngo 1.22\n", s.Type)
	for _, m := range s.Requires {
		fmt.Fprintf(&mod, "\nrequire %s %s\n", m.Path, m.Version)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"go.mod": mod.String(), "main.go": s.Main} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// build runs go build for one target. The go.sum is written by the first
// build (-mod=mod), from the module proxy's checksums.
func build(t testing.TB, src, exe string, target Target) {
	t.Helper()
	goos, goarch, ok := strings.Cut(target.Platform, "_")
	if !ok {
		t.Fatalf("goprovider: platform %q is not OS_ARCH", target.Platform)
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-o", exe}
	if target.Stripped {
		args = append(args, "-ldflags=-s -w")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, //nolint:forbidigo // test support: the go command needs the test's environment (GOMODCACHE, GOPROXY, HOME)
		"CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goprovider: go build for %s: %v\n%s", target.Platform, err, out)
	}
}

// The deliberately vulnerable module of Vulnerable: golang.org/x/text
// v0.3.5, which the Go vulnerability database lists under GO-2021-0113
// (language.Parse, fixed in v0.3.7) and GO-2022-1059
// (language.ParseAcceptLanguage, fixed in v0.3.8); the program calls
// both, so govulncheck reports them at symbol level too.
var (
	VulnerableModule = Module{Path: "golang.org/x/text", Version: "v0.3.5"}
	// A dependency with no advisory at its version.
	SafeModule = Module{Path: "golang.org/x/mod", Version: "v0.42.0"}
)

// VulnerableAdvisories are the advisories of VulnerableModule at its
// version that the program calls, with the version that fixes each.
var VulnerableAdvisories = map[string]string{"GO-2021-0113": "0.3.7", "GO-2022-1059": "0.3.8"}

// Vulnerable is a provider whose program depends on VulnerableModule and
// SafeModule and calls the vulnerable functions, for linux_amd64,
// darwin_arm64 and windows_amd64 (stripped).
func Vulnerable(typ, version string) Spec {
	return Spec{
		Type: typ, Version: version,
		Requires: []Module{VulnerableModule, SafeModule},
		Main: `package main

import (
	"fmt"
	"os"

	"golang.org/x/mod/semver"
	"golang.org/x/text/language"
)

func main() {
	arg := os.Args[len(os.Args)-1]
	tag, err := language.Parse(arg)
	fmt.Println(tag, err, semver.IsValid(arg))
	tags, q, err := language.ParseAcceptLanguage(arg)
	fmt.Println(tags, q, err)
}
`,
		Targets: []Target{{Platform: "linux_amd64"}, {Platform: "darwin_arm64"}, {Platform: "windows_amd64", Stripped: true}},
	}
}

package sbom

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// buildText is what `go version -m` prints for a provider, tabs and all.
const buildText = "path\tgithub.com/hashicorp/terraform-provider-aws\n" +
	"mod\tgithub.com/hashicorp/terraform-provider-aws\t(devel)\t\n" +
	"dep\tgithub.com/aws/aws-sdk-go\tv1.50.0\th1:Cbh2G7v8KsFhnHqGN/ReBRhQmfPaEJmRwL8E9i0d4+M=\n" +
	"dep\tgolang.org/x/net\tv0.17.0\n" +
	"=>\tgolang.org/x/net\tv0.23.0\th1:7EYJ93RZ9vYSZAIb2x3lnuvqO5zneoD6IvWjuhfxjTs=\n" +
	"dep\tgithub.com/Azure/go-autorest\tv14.2.0+incompatible\th1:V5VMDjClKsD3rRAdQhOVcc0x8bVd3kT6LUrAgxYJfMY=\n" +
	"build\t-trimpath=true\n" +
	"build\tCGO_ENABLED=0\n" +
	"build\tGOOS=linux\n"

func testPackage(t *testing.T) Package {
	t.Helper()
	info, err := debug.ParseBuildInfo(buildText)
	if err != nil {
		t.Fatal(err)
	}
	info.GoVersion = "go1.22.5"
	return Package{
		Provider: "registry.opentofu.org/hashicorp/aws", Version: "5.0.0", Platform: "linux_amd64",
		Filename: "terraform-provider-aws_5.0.0_linux_amd64.zip",
		ZH:       "zh:" + strings.Repeat("ab", 32), H1: "h1:abc=",
		Executable: "terraform-provider-aws_v5.0.0_x5", Build: info,
		Origin: "registry.opentofu.org", KeyID: "34365D9472D7468F",
	}
}

// TestEncodeDeterministicAndComplete: the same package gives the same
// bytes, and the document lists the toolchain and every module as built.
func TestEncodeDeterministicAndComplete(t *testing.T) {
	p := testPackage(t)
	a, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Encode(p)
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings of one package differ")
	}
	var doc map[string]any
	if err := json.Unmarshal(a, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["bomFormat"] != "CycloneDX" || doc["specVersion"] != "1.6" {
		t.Fatalf("bomFormat %v specVersion %v", doc["bomFormat"], doc["specVersion"])
	}
	if _, ok := doc["metadata"].(map[string]any)["timestamp"]; ok {
		t.Fatal("the document carries a timestamp: rebuilds would change it")
	}
	got, err := Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	if got.GoVersion != p.Build.GoVersion || got.Provider != p.Provider || got.Platform != p.Platform || !got.HasBuild {
		t.Fatalf("decoded %+v", got)
	}
	var want []Module
	for _, m := range p.Build.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		want = append(want, Module{Path: m.Path, Version: m.Version})
	}
	for _, m := range got.Modules {
		if m.Main != (m.Path == p.Build.Main.Path) {
			t.Fatalf("module %+v: Main is not whether it is the main module %s", m, p.Build.Main.Path)
		}
	}
	mods := slices.DeleteFunc(got.Modules, func(m Module) bool { return m.Main })
	if !slices.Equal(mods, want) {
		t.Fatalf("modules\n%v\nwant\n%v", mods, want)
	}
	for _, m := range p.Build.Deps {
		if m.Sum != "" && !bytes.Contains(a, []byte(m.Sum)) {
			t.Fatalf("the sum %s of %s is missing", m.Sum, m.Path)
		}
	}
	other := p
	other.Platform = "darwin_arm64"
	c, _ := Encode(other)
	if serialOf(t, a) == serialOf(t, c) {
		t.Fatal("two packages share a serial number")
	}
}

func serialOf(t *testing.T, doc []byte) string {
	var d struct {
		SerialNumber string `json:"serialNumber"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	return d.SerialNumber
}

// TestEncodeNoBuildInfo says so for an executable that is not a Go
// program, and lists no modules.
func TestEncodeNoBuildInfo(t *testing.T) {
	p := testPackage(t)
	p.Build = nil
	doc, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.HasBuild || len(got.Modules) != 0 || got.GoVersion != "" {
		t.Fatalf("decoded %+v", got)
	}
}

func TestDecodeRefusesWhatIsNoSBOM(t *testing.T) {
	for _, doc := range []string{"", "{", `{"bomFormat":"CycloneDX","specVersion":"1.6"}`} {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Fatalf("Decode(%q) succeeded", doc)
		}
	}
}

// TestDecodeMarksTheMainModule: a main module with a version (a release
// built from a tagged checkout) is read back as the main module, so a
// report matches the dependencies alone, as it does from build
// information.
func TestDecodeMarksTheMainModule(t *testing.T) {
	p := testPackage(t)
	p.Build.Main.Version = "v5.0.0"
	data, err := Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var main []Module
	for _, m := range c.Modules {
		if m.Main {
			main = append(main, m)
		}
	}
	if want := (Module{Path: p.Build.Main.Path, Version: "v5.0.0", Main: true}); len(main) != 1 || main[0] != want {
		t.Fatalf("main modules %v, want [%v]", main, want)
	}
}

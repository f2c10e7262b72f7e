package mirror

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// testDescriber describes a package as JSON of its description, and
// counts its calls.
type testDescriber struct{ calls atomic.Int32 }

func (d *testDescriber) describe(desc Description) ([]byte, error) {
	d.calls.Add(1)
	return json.Marshal(map[string]any{
		"package": desc.Package.String(), "filename": desc.Filename, "zh": desc.ZH, "h1": desc.H1,
		"executable": desc.Program.Executable, "go": desc.Program.Info != nil,
		"origin": desc.Origin, "key": desc.KeyID,
	})
}

// Every package a build verifies gets its SBOM beside its archive, from
// the describer, named by the provenance with what the description
// says; a rebuild keeps it, describing nothing and writing nothing.
func TestBuildPublishesEveryPackagesSBOM(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	d := &testDescriber{}
	req := requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	if err := h.build(t, Options{Describe: d.describe}, req).Err(); err != nil {
		t.Fatal(err)
	}
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	prov, err := layout.DecodeProvenance([]byte(h.read(t, layout.ProvenancePath(p, v))))
	if err != nil {
		t.Fatal(err)
	}
	for _, plat := range []string{"darwin_arm64", "linux_amd64"} {
		pl := addrs.MustParsePlatform(plat)
		entry := prov.Archives[plat]
		if entry.SBOM != layout.SBOMName(p, v, pl) || entry.GoVersion != "" {
			t.Errorf("%s: provenance names the SBOM %q (Go %q); want %q and no Go version (the archive holds a shell script)", plat, entry.SBOM, entry.GoVersion, layout.SBOMName(p, v, pl))
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(h.read(t, layout.SBOMPath(p, v, pl))), &got); err != nil {
			t.Fatalf("%s: %v", plat, err)
		}
		want := map[string]any{
			"package": "registry.opentofu.org/hashicorp/foo 1.0.0 " + plat, "filename": entry.Filename, "zh": string(entry.ZH), "h1": string(entry.H1),
			"executable": "terraform-provider-x", "go": false, "origin": "registry.opentofu.org", "key": "676F6F64", // fakeChecker: the hex of "good"
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: SBOM %v; want %v", plat, got, want)
		}
	}
	before, calls := h.snapshot(t), d.calls.Load()
	if calls != 2 {
		t.Errorf("the describer was called %d times; want once per package", calls)
	}
	r := h.build(t, Options{Describe: d.describe}, req)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if after := h.snapshot(t); !maps.Equal(before, after) || d.calls.Load() != calls {
		t.Errorf("a rebuild changed the tree (%v) or described again (%d calls)", !maps.Equal(before, after), d.calls.Load()-calls)
	}
}

// A package published without an SBOM keeps none through a rebuild,
// which reads nothing; a build that reads its archive anyway
// (VerifyExisting) adds it, leaving the archive as it was.
func TestVerifyExistingAddsTheSBOMOfAPackagePublishedWithout(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	req := requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64")
	if err := h.build(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	archive := h.read(t, layout.ArchivePath(p, v, plat))
	d := &testDescriber{}
	if err := h.build(t, Options{Describe: d.describe}, req).Err(); err != nil {
		t.Fatal(err)
	}
	if h.exists(layout.SBOMPath(p, v, plat)) || d.calls.Load() != 0 {
		t.Fatalf("a rebuild without --verify-existing described the package (%d calls) or wrote its SBOM", d.calls.Load())
	}
	fetches := h.src.fetches[p.String()+"/"+v.String()+"/"+layout.ArchiveName(p, v, plat)]
	if fetches != 1 {
		t.Fatalf("the archive was fetched %d times; want once", fetches)
	}
	if err := h.build(t, Options{Describe: d.describe, VerifyExisting: true}, req).Err(); err != nil {
		t.Fatal(err)
	}
	if !h.exists(layout.SBOMPath(p, v, plat)) || !strings.Contains(h.read(t, layout.ProvenancePath(p, v)), layout.SBOMName(p, v, plat)) {
		t.Errorf("--verify-existing did not add the SBOM, or the provenance does not name it")
	}
	if got := h.read(t, layout.ArchivePath(p, v, plat)); got != archive {
		t.Errorf("the archive changed")
	}
	if again := h.src.fetches[p.String()+"/"+v.String()+"/"+layout.ArchiveName(p, v, plat)]; again != fetches {
		t.Errorf("the archive was downloaded again (%d times), though the directory holds it", again-fetches)
	}
}

// A describer's failure fails the package, and nothing of it is
// published.
func TestDescriberFailureFailsThePackage(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	fail := func(Description) ([]byte, error) { return nil, errors.New("no room for the SBOM") }
	r := h.build(t, Options{Describe: fail}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"))
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "no room for the SBOM") {
		t.Errorf("build: %v; want the describer's failure", err)
	}
	if h.exists(fooDir + "1.0.0.json") {
		t.Error("the release was published without its SBOM")
	}
}

// Verify checks the SBOM the provenance names: a missing one is a
// problem, and so is one the checker refuses; one named nowhere is not
// looked for.
func TestVerifyChecksTheSBOMs(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	d := &testDescriber{}
	if err := h.build(t, Options{Describe: d.describe}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64")).Err(); err != nil {
		t.Fatal(err)
	}
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	verify := func(check SBOMChecker) []string {
		tree, err := layout.OpenExisting(h.root)
		if err != nil {
			t.Fatal(err)
		}
		r, err := (&Verifier{Mirror: tree, Checker: fakeChecker{}, TempDir: t.TempDir(), CheckSBOM: check}).Verify(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range r.Problems {
			out = append(out, p.Message)
		}
		return out
	}
	var checked []byte
	accept := func(_ Package, _ layout.ProvenanceArchive, data []byte, _ hashing.Program) error {
		checked = data
		return nil
	}
	if got := verify(accept); len(got) != 0 || string(checked) != h.read(t, layout.SBOMPath(p, v, plat)) {
		t.Errorf("problems %q, checked %q; want none, and the SBOM checked", got, checked)
	}
	refuse := func(Package, layout.ProvenanceArchive, []byte, hashing.Program) error {
		return errors.New("not CycloneDX")
	}
	if got := verify(refuse); len(got) != 1 || !strings.Contains(got[0], "not CycloneDX") {
		t.Errorf("problems %q; want the checker's", got)
	}
	if err := os.Remove(filepath.Join(h.root, layout.SBOMPath(p, v, plat))); err != nil {
		t.Fatal(err)
	}
	if got := verify(accept); len(got) != 1 || !strings.Contains(got[0], "cannot be read") {
		t.Errorf("problems %q; want the missing SBOM", got)
	}
}

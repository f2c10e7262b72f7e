package layout

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// sbomRelease is a release of hashicorp/foo 1.1.0 for linux_amd64 whose
// archive is content, with sbom (nil: none) and a record naming name as
// the SBOM (what a hostile or stale record may say).
func sbomRelease(t *testing.T, tr *Dir, content string, sbom []byte, name string) Release {
	t.Helper()
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.1.0"), addrs.MustParsePlatform("linux_amd64")
	staged := stage(t, tr, "linux.zip", content)
	sum, size, err := hashing.HashFile(staged)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Sums: []byte("sums"), Provenance: Provenance{SigningKeys: []string{}, Archives: map[string]ProvenanceArchive{
		plat.String(): {Filename: "foo.zip", H1: h1A, ZH: hashing.ZH(sum), Size: size, SBOM: name},
	}}}
	return Release{Provider: p, Version: v, Record: rec, Archives: []Archive{{Platform: plat, Staged: staged, Hashes: []hashing.Hash{hashing.ZH(sum)}, SBOM: sbom}}}
}

// The provenance names the SBOM a publication brings, and only that: a
// record naming one it does not bring names none; one without keeps the
// SBOM named before; under Repair another SBOM replaces it, under Refuse
// it is a conflict.
func TestPublishSBOM(t *testing.T) {
	ctx := context.Background()
	tr := openTree(t)
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.1.0"), addrs.MustParsePlatform("linux_amd64")
	named := func() string {
		t.Helper()
		prov, err := tr.ReadProvenance(ctx, p, v)
		if err != nil {
			t.Fatal(err)
		}
		return prov.Archives[plat.String()].SBOM
	}
	if _, err := tr.PublishAll(ctx, Repair, []Release{sbomRelease(t, tr, "zip", nil, "../../../../etc/passwd")}); err != nil {
		t.Fatal(err)
	}
	if got := named(); got != "" {
		t.Errorf("a record naming an SBOM the publication does not bring names %q", got)
	}
	if _, err := tr.ReadSBOM(ctx, p, v, plat); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadSBOM without one: %v", err)
	}
	for _, c := range []struct {
		sbom   []byte
		policy Policy
		want   string // the SBOM after; "conflict" for a refused publication
	}{
		{[]byte("first"), Repair, "first"},
		{nil, Repair, "first"},
		{[]byte("first"), Refuse, "first"},
		{[]byte("second"), Refuse, "conflict"},
		{[]byte("second"), Repair, "second"},
	} {
		_, err := tr.PublishAll(ctx, c.policy, []Release{sbomRelease(t, tr, "zip", c.sbom, "")})
		var conflict *ConflictError
		switch {
		case c.want == "conflict" && !errors.As(err, &conflict):
			t.Errorf("policy %d, SBOM %q: %v; want a conflict", c.policy, c.sbom, err)
			continue
		case c.want == "conflict":
			if !strings.Contains(err.Error(), SBOMName(p, v, plat)) {
				t.Errorf("the conflict does not name the SBOM: %v", err)
			}
			continue
		case err != nil:
			t.Fatalf("policy %d, SBOM %q: %v", c.policy, c.sbom, err)
		}
		got, err := tr.ReadSBOM(ctx, p, v, plat)
		if err != nil || string(got) != c.want || named() != SBOMName(p, v, plat) {
			t.Errorf("policy %d, SBOM %q: the tree holds %q (%v), named %q; want %q", c.policy, c.sbom, got, err, named(), c.want)
		}
	}
}

// SBOMFor gives the SBOM's path only for the name tfmirror gives it.
func TestSBOMFor(t *testing.T) {
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.1.0")
	for name, want := range map[string]bool{
		"terraform-provider-foo_1.1.0_linux_amd64.cdx.json": true,
		"": false,
		"terraform-provider-foo_1.1.0_darwin_arm64.cdx.json":   false,
		"../terraform-provider-foo_1.1.0_linux_amd64.cdx.json": false,
		"terraform-provider-foo_1.1.0_linux_amd64.zip":         false,
	} {
		rel, ok := ProvenanceArchive{SBOM: name}.SBOMFor(p, v, "linux_amd64")
		if ok != want || (ok && rel != "registry.opentofu.org/hashicorp/foo/"+name) {
			t.Errorf("SBOMFor(%q) = %q, %v; want %v", name, rel, ok, want)
		}
	}
	if _, ok := (ProvenanceArchive{SBOM: "x"}).SBOMFor(p, v, "not a platform"); ok {
		t.Error("SBOMFor of a key that is no platform")
	}
}

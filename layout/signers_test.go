package layout

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Signers reads, from the provenance records, the key that verified each
// signed release a tree holds: fingerprint and times as recorded, by key
// ID alone for an older record; unsigned releases and releases without a
// record are left out.
func TestTreeSigners(t *testing.T) {
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	linux := addrs.MustParsePlatform("linux_amd64")
	made := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	records := map[string]*Record{
		"1.0.0": {Provenance: Provenance{KeyID: "34365D9472D7468F", SigningKeys: []string{"key"}}},
		"2.0.0": {Provenance: Provenance{KeyID: "34365D9472D7468F", Fingerprint: "C874011F0AB405110D02105534365D9472D7468F", KeyCreated: made, KeyExpires: made.AddDate(5, 0, 0), SigningKeys: []string{"key"}}, Signature: []byte("sig")},
		"3.0.0": {Provenance: Provenance{SigningKeys: []string{}}}, // unsigned
		"4.0.0": nil,                                               // no record
	}
	for v, rec := range records {
		staged := stage(t, tr, v+".zip", "zip "+v)
		if rec != nil {
			rec.Sums = []byte("0000000000000000000000000000000000000000000000000000000000000000  terraform-provider-foo_" + v + "_linux_amd64.zip\n")
			rec.Provenance.Archives = map[string]ProvenanceArchive{"linux_amd64": {Filename: "terraform-provider-foo_" + v + "_linux_amd64.zip", H1: h1A}}
		}
		if err := tr.Publish(Release{Provider: p, Version: addrs.MustParseVersion(v), Record: rec, Archives: []Archive{{Platform: linux, Staged: staged, Hashes: []hashing.Hash{h1A}}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tr.Destination().Signers(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	want := []KeptSigner{
		{Version: addrs.MustParseVersion("1.0.0"), KeyID: "34365D9472D7468F"},
		{Version: addrs.MustParseVersion("2.0.0"), KeyID: "34365D9472D7468F", Fingerprint: "C874011F0AB405110D02105534365D9472D7468F", Created: made, Expires: made.AddDate(5, 0, 0)},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b addrs.Version) bool { return a.Same(b) })); diff != "" {
		t.Errorf("Signers (-want +got):\n%s", diff)
	}

	if got, err := tr.Destination().Signers(context.Background(), addrs.MustParseProvider("hashicorp/other")); err != nil || len(got) != 0 {
		t.Errorf("Signers of a provider the tree does not hold = %v, %v; want none", got, err)
	}
	if err := os.WriteFile(tr.Path(ProvenancePath(p, addrs.MustParseVersion("2.0.0"))), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Destination().Signers(context.Background(), p); err == nil {
		t.Error("Signers read past a provenance record that does not parse")
	}
}

package layout

import (
	"slices"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// A provider's warnings are written when they change, left alone when
// they do not (no write), deleted when there are none any more, and never
// written for a provider the tree does not hold.
func TestRecordWarnings(t *testing.T) {
	s, tr := sealedStore(t)
	foo, bar := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseProvider("hashicorp/bar")
	publishSealed(t, tr, "1.0.0", "one")
	s.take()
	ctx := t.Context()
	for _, step := range []struct {
		name     string
		p        addrs.Provider
		warnings []string
		ops      []string
	}{
		{"new", foo, []string{"deprecated", "use acme/foo"}, []string{"put " + WarningsPath(foo)}},
		{"the same", foo, []string{"deprecated", "use acme/foo"}, nil},
		{"changed", foo, []string{"deprecated"}, []string{"put " + WarningsPath(foo)}},
		{"not held", bar, []string{"deprecated"}, nil},
		{"gone", foo, nil, []string{"delete " + WarningsPath(foo)}},
		{"still none", foo, nil, nil},
	} {
		if err := tr.RecordWarnings(ctx, step.p, step.warnings); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if ops := s.take(); !slices.Equal(ops, step.ops) {
			t.Errorf("%s: writes %q, want %q", step.name, ops, step.ops)
		}
		got, err := tr.ReadWarnings(ctx, step.p)
		if err != nil || !slices.Equal(got, step.warnings) && step.p == foo {
			t.Errorf("%s: kept %q, %v; want %q", step.name, got, err, step.warnings)
		}
	}
}

// DescribeCatalog lists the kept warnings and the signers in
// catalog.json, writing only when they change.
func TestDescribeCatalog(t *testing.T) {
	s, tr := sealedStore(t)
	foo := addrs.MustParseProvider("hashicorp/foo")
	publishSealed(t, tr, "1.0.0", "one")
	ctx := t.Context()
	if changed, err := tr.DescribeCatalog(ctx); err != nil || changed {
		t.Fatalf("an unsigned release and no warnings: changed %v, %v; want nothing to say", changed, err)
	}
	if err := tr.RecordWarnings(ctx, foo, []string{"deprecated"}); err != nil {
		t.Fatal(err)
	}
	s.take()
	if changed, err := tr.DescribeCatalog(ctx); err != nil || !changed {
		t.Fatalf("with warnings: changed %v, %v", changed, err)
	}
	if ops := s.take(); !slices.Equal(ops, []string{"put " + CatalogPath}) {
		t.Errorf("writes %q", ops)
	}
	c, _, err := tr.ReadCatalog(ctx)
	if err != nil || !slices.Equal(c.Deprecations[foo.String()], []string{"deprecated"}) {
		t.Errorf("catalog deprecations %q, %v", c.Deprecations, err)
	}
	if changed, err := tr.DescribeCatalog(ctx); err != nil || changed || len(s.take()) != 0 {
		t.Errorf("again: changed %v, %v; want no write", changed, err)
	}
}

// SignerHistory: each primary key once, in the order of the oldest
// release it signed; a later key names the key it replaced; a key named
// by ID alone in old records is the same key as with its fingerprint.
func TestSignerHistory(t *testing.T) {
	v := addrs.MustParseVersion
	day := func(n int) time.Time { return time.Date(2026, 1, n, 0, 0, 0, 0, time.UTC) }
	got := SignerHistory([]KeptSigner{
		{Version: v("3.0.0"), KeyID: "B", Fingerprint: "FB"},
		{Version: v("1.0.0"), KeyID: "A"},
		{Version: v("2.0.0"), KeyID: "A", Fingerprint: "FA", Expires: day(1)},
		{Version: v("2.1.0"), KeyID: "A", Fingerprint: "FA", Expires: day(2)}, // re-issued
		{Version: v("4.0.0"), KeyID: "A", Fingerprint: "FA", Expires: day(2)}, // back to A
	})
	want := []CatalogSigner{
		{KeyID: "A", Fingerprint: "FA", Expires: day(2), FirstVersion: "1.0.0", LastVersion: "4.0.0", Releases: 4},
		{KeyID: "B", Fingerprint: "FB", FirstVersion: "3.0.0", LastVersion: "3.0.0", Releases: 1, Replaced: "FA"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("SignerHistory =\n%+v\nwant\n%+v", got, want)
	}
	if SignerHistory(nil) != nil {
		t.Error("no signers: want none")
	}
}

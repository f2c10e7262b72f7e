package bundle

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/layout"
)

var foo = addrs.MustParseProvider("hashicorp/foo")

// keepWarnings records warnings of foo in the mirror directory dir, as a
// build does.
func keepWarnings(t *testing.T, dir string, warnings ...string) {
	t.Helper()
	underLock(t, dir, func(tree *layout.Tree) error { return tree.RecordWarnings(t.Context(), foo, warnings) })
}

// keptWarnings reads what the mirror directory dir keeps of foo.
func keptWarnings(t *testing.T, dir string) []string {
	t.Helper()
	tree, err := layout.OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := tree.ReadWarnings(t.Context(), foo)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func importInto(t *testing.T, bundle, dest string) error {
	t.Helper()
	_, err := Import(context.Background(), ImportOptions{Bundle: bundle, Out: dest, Into: dirTarget(t, dest)})
	return err
}

// A bundle carries each provider's registry warnings (a deprecation), so
// that the mirror inside the air gap shows them as the connected one does.
func TestBundleCarriesWarnings(t *testing.T) {
	site := hSite(t)
	keepWarnings(t, site, "This provider is deprecated: use hashicorp/bar.")
	file := filepath.Join(t.TempDir(), "b.tgz")
	create(t, site, file)
	hIndex(t, targz.Read(t, file), "mirror/"+layout.WarningsPath(foo))

	dest := filepath.Join(t.TempDir(), "dest")
	if err := importInto(t, file, dest); err != nil {
		t.Fatal(err)
	}
	sameFiles(t, published(t, site), published(t, dest))

	// The connected mirror's origin stopped warning: the next bundle
	// removes what the destination kept.
	keepWarnings(t, site)
	create(t, site, file)
	if err := importInto(t, file, dest); err != nil {
		t.Fatal(err)
	}
	if w := keptWarnings(t, dest); w != nil {
		t.Errorf("the destination still keeps %q", w)
	}
}

// Warnings the destination keeps of a provider the bundle does not hold
// stay.
func TestBundleLeavesOtherProvidersWarnings(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "dest")
	publishRelease(t, dest, newSigner(t), "foo", "0.9.0", "linux_amd64")
	keepWarnings(t, dest, "kept")
	other := t.TempDir()
	publishRelease(t, other, newSigner(t), "bar", "1.0.0", "linux_amd64")
	file := filepath.Join(t.TempDir(), "b.tgz")
	create(t, other, file)
	if err := importInto(t, file, layout.NetworkTreeOf(dest)); err != nil {
		t.Fatal(err)
	}
	if w := keptWarnings(t, layout.NetworkTreeOf(dest)); !slices.Equal(w, []string{"kept"}) {
		t.Errorf("foo's warnings are %q, want them kept", w)
	}
}

// TestHardeningWarnings: a bundle's warnings.json is checked before
// anything is published.
func TestHardeningWarnings(t *testing.T) {
	site := hSite(t)
	keepWarnings(t, site, "deprecated")
	file := filepath.Join(t.TempDir(), "b.tgz")
	create(t, site, file)
	es := targz.Read(t, file)
	i := hIndex(t, es, "mirror/"+layout.WarningsPath(foo))
	es[i].Data = []byte("{\n  \"warnings\": [\n    \"deprecated\"\n  ],\n  \"also\": 1\n}\n")
	hRefused(t, hWrite(t, targz.Pack(t, relist(t, es), nil)), ImportOptions{}, layout.WarningsPath(foo))
	if err := os.WriteFile(filepath.Join(layout.NetworkTreeOf(site), filepath.FromSlash(layout.WarningsPath(foo))), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: file}); err == nil {
		t.Error("a mirror with a damaged warnings.json was bundled")
	}
}

package bundle

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/layout"
)

// recordedSite is hSite with the record of a build, returned with the
// record's path.
func recordedSite(t *testing.T) (string, string) {
	t.Helper()
	site := hSite(t)
	var rel string
	underLock(t, site, func(tree *layout.Tree) error {
		r, err := tree.RecordChange(t.Context(), layout.ChangeRecord{
			Time: time.Date(2026, 11, 28, 14, 30, 0, 0, time.UTC), Tool: "tfmirror/test", Command: "tfmirror build",
			Added: []layout.ChangedPackage{{Package: "registry.opentofu.org/hashicorp/foo", Version: "1.0.0", Platforms: []string{"linux_amd64"}}},
		}, nil)
		rel = r.Path
		return err
	})
	return site, rel
}

// recordedBundle packs recordedSite and returns its entries.
func recordedBundle(t *testing.T) ([]tarEntry, string) {
	t.Helper()
	site, rel := recordedSite(t)
	file := filepath.Join(t.TempDir(), "b.tgz")
	if _, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: file}); err != nil {
		t.Fatal(err)
	}
	return targz.Read(t, file), rel
}

func TestBundleCarriesChangeRecords(t *testing.T) {
	es, rel := recordedBundle(t)
	for _, name := range []string{rel, layout.ChangeIndexPath, layout.ChangeFeedPath} {
		hIndex(t, es, "mirror/"+name)
	}
	dest := filepath.Join(t.TempDir(), "dest")
	if _, err := Import(context.Background(), ImportOptions{Bundle: hWrite(t, targz.Pack(t, es, nil)), Out: dest, Into: dirTarget(t, dest)}); err != nil {
		t.Fatal(err)
	}
}

// TestHardeningChangeRecords: a bundle's change records are checked as
// the rest of its mirror is, before anything is published.
func TestHardeningChangeRecords(t *testing.T) {
	t.Run("a record edited", func(t *testing.T) {
		es, rel := recordedBundle(t)
		i := hIndex(t, es, "mirror/"+rel)
		es[i].Data = bytes.Replace(es[i].Data, []byte("1.0.0"), []byte("6.6.6"), 1) // canonical still
		hRefused(t, hWrite(t, targz.Pack(t, relist(t, es), nil)), ImportOptions{}, "the record's digest is not the one the index lists")
	})
	t.Run("an index naming a path out of the tree", func(t *testing.T) {
		es, rel := recordedBundle(t)
		i := hIndex(t, es, "mirror/"+layout.ChangeIndexPath)
		es[i].Data = bytes.Replace(es[i].Data, []byte(rel), []byte("changes/../../etc/passwd"), 1)
		hRefused(t, hWrite(t, targz.Pack(t, relist(t, es), nil)), ImportOptions{}, "is not the path of a change record")
	})
	t.Run("a record no index lists", func(t *testing.T) {
		es, rel := recordedBundle(t)
		i := hIndex(t, es, "mirror/"+rel)
		es = append(es, targz.Regular("mirror/changes/2026-11-28T143001Z-000000000000.json", string(es[i].Data)))
		hRefused(t, hWrite(t, targz.Pack(t, relist(t, es), nil)), ImportOptions{}, "not part of the mirror")
	})
	t.Run("create refuses a damaged record", func(t *testing.T) {
		site, rel := recordedSite(t)
		path := filepath.Join(site, filepath.FromSlash(rel))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bytes.Replace(data, []byte("1.0.0"), []byte("6.6.6"), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: filepath.Join(t.TempDir(), "b.tgz")})
		if err == nil || !strings.Contains(err.Error(), rel) {
			t.Fatalf("err = %v, want the mirror refused for %s", err, rel)
		}
	})
}

// underLock runs write on the mirror directory dir as a writer does,
// under its publish lock.
func underLock(t *testing.T, dir string, write func(*layout.Tree) error) {
	t.Helper()
	store, err := layout.NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := store.Lock(t.Context(), time.Second, layout.Publish)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unlock() }()
	if err := write(layout.NewTree(store)); err != nil {
		t.Fatal(err)
	}
}

package bundle

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// watchedStore is a store that is not a local directory, as far as a tree
// can tell (it hides DirStore's local paths): it records every call, and
// runs a hook before the first Open of a path or a listing.
type watchedStore struct {
	dir *layout.DirStore

	mu     sync.Mutex
	opens  map[string]int
	other  []string // calls besides Open and List
	before map[string]func()
}

func newWatchedStore(t *testing.T, root string) *watchedStore {
	t.Helper()
	d, err := layout.NewDirStore(root)
	if err != nil {
		t.Fatal(err)
	}
	return &watchedStore{dir: d, opens: map[string]int{}, before: map[string]func(){}}
}

func (w *watchedStore) hook(key string) {
	w.mu.Lock()
	f := w.before[key]
	delete(w.before, key)
	w.mu.Unlock()
	if f != nil {
		f()
	}
}

func (w *watchedStore) note(call string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.other = append(w.other, call)
}

func (w *watchedStore) Location() string { return "s3://bucket/prefix/" }

func (w *watchedStore) ReadFile(ctx context.Context, rel string, limit int64) ([]byte, error) {
	w.note("ReadFile " + rel)
	return w.dir.ReadFile(ctx, rel, limit)
}

func (w *watchedStore) Open(ctx context.Context, rel string) (io.ReadCloser, error) {
	w.hook(rel)
	w.mu.Lock()
	w.opens[rel]++
	w.mu.Unlock()
	return w.dir.Open(ctx, rel)
}

func (w *watchedStore) Stat(ctx context.Context, rel string) (layout.FileInfo, error) {
	w.note("Stat " + rel)
	return w.dir.Stat(ctx, rel)
}

func (w *watchedStore) List(ctx context.Context, dir string) ([]string, error) {
	w.hook("list")
	return w.dir.List(ctx, dir)
}

func (w *watchedStore) Put(ctx context.Context, rel string, c layout.Content) error {
	w.note("Put " + rel)
	return w.dir.Put(ctx, rel, c)
}

func (w *watchedStore) Delete(ctx context.Context, rel string) error {
	w.note("Delete " + rel)
	return w.dir.Delete(ctx, rel)
}

func (w *watchedStore) Lock(ctx context.Context, wait time.Duration, mode layout.LockMode) (func() error, error) {
	w.note("Lock")
	return w.dir.Lock(ctx, wait, mode)
}

func createFrom(t *testing.T, s layout.Store, out string) *CreateReport {
	t.Helper()
	return createWith(t, CreateOptions{Mirror: layout.NewTree(s), Out: out})
}

// A mirror in a store is packed from a snapshot: the same bundle as from a
// directory, each file read once, nothing written and no lock taken.
func TestBundleOfStoreIsTheDirectoryBundle(t *testing.T) {
	site := twoReleaseSite(t)
	work := t.TempDir()
	want := create(t, site, filepath.Join(work, "dir.tgz"))
	before := files(t, site)

	store := newWatchedStore(t, site)
	out := filepath.Join(work, "sub", "store.tgz")
	got := createFrom(t, store, out)
	a, _ := os.ReadFile(filepath.Join(work, "dir.tgz"))
	b, _ := os.ReadFile(out)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the bundle of the store differs from the bundle of the directory")
	}
	got.Out = want.Out
	if !slices.Equal(got.Skipped, []string{"robots.txt"}) || got.Providers != want.Providers || got.Versions != want.Versions ||
		got.Archives != want.Archives || got.Files != want.Files || got.Bytes != want.Bytes {
		t.Errorf("report %+v, want %+v", got, want)
	}
	if len(store.other) > 0 {
		t.Errorf("calls besides Open and List: %v", store.other)
	}
	for rel, n := range store.opens {
		if n != 1 {
			t.Errorf("%s opened %d times", rel, n)
		}
	}
	if _, ok := store.opens["robots.txt"]; ok {
		t.Error("a file that is not part of the mirror was read")
	}
	sameFiles(t, before, files(t, site))
	if left, _ := os.ReadDir(filepath.Join(work, "sub")); len(left) != 1 {
		t.Errorf("left next to the bundle: %v", left)
	}
}

// Builds may publish into the store while it is packed: what is packed is
// a tree that verifies, with each release whole, whichever publications it
// sees.
func TestBundleOfStoreWhilePublishing(t *testing.T) {
	s := newSigner(t)
	foo, v1 := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	for _, tc := range []struct {
		name     string
		at       string // the Open (or "list") before which another build publishes
		typ, ver string
		versions int
	}{
		{"a version after its index was read", layout.VersionPath(foo, v1), "foo", "1.1.0", 1},
		{"a version before its index is read", "catalog.json", "foo", "1.1.0", 2},
		{"a provider after the catalog was read", "list", "bar", "2.0.0", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := t.TempDir()
			publishRelease(t, site, s, "foo", "1.0.0", "linux_amd64")
			store := newWatchedStore(t, site)
			published := false
			store.before[tc.at] = func() {
				publishRelease(t, site, s, tc.typ, tc.ver, "linux_amd64")
				published = true
			}
			out := filepath.Join(t.TempDir(), "b.tgz")
			r := createFrom(t, store, out)
			if !published {
				t.Fatal("nothing was published meanwhile")
			}
			if r.Versions != tc.versions {
				t.Errorf("%d versions packed, want %d", r.Versions, tc.versions)
			}
			// What was packed imports, so it verifies.
			dest := filepath.Join(t.TempDir(), "dest")
			if _, err := Import(context.Background(), ImportOptions{Bundle: out, Out: dest, Into: dirTarget(t, dest)}); err != nil {
				t.Fatalf("Import: %v", err)
			}
		})
	}
}

// A file deleted from the store while it is packed (a prune) refuses the
// mirror, naming the object, not its copy.
func TestBundleOfStoreRefusesWhatVanishes(t *testing.T) {
	site := t.TempDir()
	publishRelease(t, site, newSigner(t), "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	archive := layout.ArchivePath(p, v, addrs.Platform{OS: "darwin", Arch: "arm64"})
	store := newWatchedStore(t, site)
	store.before[archive] = func() {
		if err := os.Remove(filepath.Join(site, filepath.FromSlash(archive))); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "b.tgz")
	_, err := Create(context.Background(), CreateOptions{Mirror: layout.NewTree(store), Out: out})
	if err == nil || !strings.Contains(err.Error(), "darwin_arm64") {
		t.Fatalf("err = %v, want a refusal naming the archive", err)
	}
	if strings.Contains(err.Error(), ".tmp-") {
		t.Errorf("the error names the local copy: %v", err)
	}
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("a bundle was written: %v", serr)
	}
	if left, _ := os.ReadDir(filepath.Dir(out)); len(left) != 0 {
		t.Errorf("left next to the bundle: %v", left)
	}
}

// An empty store is no mirror.
func TestBundleOfStoreRefusesEmptyStore(t *testing.T) {
	store := newWatchedStore(t, t.TempDir())
	out := filepath.Join(t.TempDir(), "b.tgz")
	if _, err := Create(context.Background(), CreateOptions{Mirror: layout.NewTree(store), Out: out}); err == nil || !strings.Contains(err.Error(), ErrEmptyMirror.Error()) {
		t.Fatalf("err = %v, want ErrEmptyMirror", err)
	}
}

package layout

import (
	"context"
	"crypto/sha256"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// watchedStore is a DirStore that makes every archive write last a while
// and records how many were in flight at once, and which documents were
// written before every archive of their directory was.
type watchedStore struct {
	*DirStore
	archives int // how many each provider's directory gets

	mu       sync.Mutex
	inFlight int
	most     int
	done     map[string]int // directory -> archives written
	early    []string
}

func (w *watchedStore) Put(ctx context.Context, rel string, c Content) error {
	dir := path.Dir(rel)
	if !strings.HasSuffix(rel, ".zip") {
		w.mu.Lock()
		if dir != "." && w.done[dir] < w.archives {
			w.early = append(w.early, rel)
		}
		w.mu.Unlock()
		return w.DirStore.Put(ctx, rel, c)
	}
	w.mu.Lock()
	w.inFlight++
	w.most = max(w.most, w.inFlight)
	w.mu.Unlock()
	time.Sleep(20 * time.Millisecond) // an upload: long enough for the others to start
	err := w.DirStore.Put(ctx, rel, c)
	w.mu.Lock()
	w.inFlight--
	w.done[dir]++
	w.mu.Unlock()
	return err
}

// A release's archives are written several at a time, and no document
// that lists them before all are; two publications at once into one tree
// share its bound (maxWrites) instead of having one each.
func TestPublishWritesArchivesTogetherBeforeDocuments(t *testing.T) {
	tr := openTree(t)
	plats := []string{"linux_amd64", "linux_arm64", "linux_386", "darwin_amd64", "darwin_arm64", "windows_amd64", "windows_386", "freebsd_amd64"}
	w := &watchedStore{DirStore: tr.Store, archives: len(plats), done: map[string]int{}}
	tree := NewTree(w)
	v := addrs.MustParseVersion("1.0.0")
	providers := []addrs.Provider{addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseProvider("hashicorp/bar")}
	var wg sync.WaitGroup
	errs := make([]error, len(providers))
	reports := make([]PublishReport, len(providers))
	for i, p := range providers {
		r := Release{Provider: p, Version: v}
		for _, plat := range plats {
			content := p.String() + " archive for " + plat
			r.Archives = append(r.Archives, Archive{
				Platform: addrs.MustParsePlatform(plat),
				Staged:   stage(t, tr, p.Type+plat+".zip", content),
				Hashes:   []hashing.Hash{hashing.ZH(sha256.Sum256([]byte(content)))},
				Move:     true,
			})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i], errs[i] = tree.PublishAll(context.Background(), Repair, []Release{r})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		if reports[i].Written < len(plats)+2 { // the archives, <version>.json and index.json at least
			t.Errorf("the publication of %s reports %d writes; want at least %d", providers[i], reports[i].Written, len(plats)+2)
		}
	}
	if w.most < 2 || w.most > maxWrites {
		t.Errorf("at most %d archives were written at once; want from 2 to %d", w.most, maxWrites)
	}
	if len(w.early) > 0 {
		t.Errorf("written before every archive of their directory was: %q", w.early)
	}
	for _, p := range providers {
		for _, plat := range plats {
			rel := ArchivePath(p, v, addrs.MustParsePlatform(plat))
			if got := readTreeFile(t, tr, rel); got != p.String()+" archive for "+plat {
				t.Errorf("%s holds %q", rel, got)
			}
		}
		if doc := readTreeFile(t, tr, VersionPath(p, v)); strings.Count(doc, ".zip") != len(plats) {
			t.Errorf("%s does not list the %d archives:\n%s", VersionPath(p, v), len(plats), doc)
		}
	}
}

package layout

import (
	"context"
	"crypto/sha256"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// watchedStore is a DirStore that makes every archive write last a while
// and records how many were in flight at once, and which documents were
// written before every archive was.
type watchedStore struct {
	*DirStore
	archives int // how many the publication writes

	mu       sync.Mutex
	inFlight int
	most     int
	done     int
	early    []string
}

func (w *watchedStore) Put(ctx context.Context, rel string, c Content) error {
	if !strings.HasSuffix(rel, ".zip") {
		w.mu.Lock()
		if w.done < w.archives {
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
	w.done++
	w.mu.Unlock()
	return err
}

// A release's archives are written several at a time (at most
// parallelWrites), and no document that lists them before all are.
func TestPublishWritesArchivesTogetherBeforeDocuments(t *testing.T) {
	tr := openTree(t)
	plats := []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64", "freebsd_amd64"}
	w := &watchedStore{DirStore: tr.Store, archives: len(plats)}
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	r := Release{Provider: p, Version: v}
	for _, plat := range plats {
		content := "archive for " + plat
		r.Archives = append(r.Archives, Archive{
			Platform: addrs.MustParsePlatform(plat),
			Staged:   stage(t, tr, plat+".zip", content),
			Hashes:   []hashing.Hash{hashing.ZH(sha256.Sum256([]byte(content)))},
			Move:     true,
		})
	}
	report, err := NewTree(w).PublishAll(context.Background(), Repair, []Release{r})
	if err != nil {
		t.Fatal(err)
	}
	if w.most < 2 || w.most > parallelWrites {
		t.Errorf("at most %d archives were written at once; want from 2 to %d", w.most, parallelWrites)
	}
	if len(w.early) > 0 {
		t.Errorf("written before every archive was: %q", w.early)
	}
	if report.Written < len(plats)+2 { // the archives, <version>.json and index.json at least
		t.Errorf("the publication reports %d writes; want at least %d", report.Written, len(plats)+2)
	}
	for _, plat := range plats {
		rel := ArchivePath(p, v, addrs.MustParsePlatform(plat))
		if got := readTreeFile(t, tr, rel); got != "archive for "+plat {
			t.Errorf("%s holds %q", rel, got)
		}
	}
	if doc := readTreeFile(t, tr, VersionPath(p, v)); strings.Count(doc, ".zip") != len(plats) {
		t.Errorf("%s does not list the %d archives:\n%s", VersionPath(p, v), len(plats), doc)
	}
}

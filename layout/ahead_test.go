package layout

import (
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// remoteDir is a directory store seen only through Store, as a bucket is
// (the tree cannot reach its files on the local filesystem), that counts
// the Stats and Puts of each path.
type remoteDir struct {
	Store

	mu    sync.Mutex
	stats map[string]int
	puts  map[string]int
}

func (r *remoteDir) Stat(ctx context.Context, rel string) (FileInfo, error) {
	r.mu.Lock()
	r.stats[rel]++
	r.mu.Unlock()
	return r.Store.Stat(ctx, rel)
}

func (r *remoteDir) Put(ctx context.Context, rel string, c Content) error {
	r.mu.Lock()
	r.puts[rel]++
	r.mu.Unlock()
	return r.Store.Put(ctx, rel, c)
}

func (r *remoteDir) PutIf(ctx context.Context, rel string, c Content, tag string) error {
	r.mu.Lock()
	r.puts[rel]++
	r.mu.Unlock()
	return r.Store.(Conditional).PutIf(ctx, rel, c, tag)
}

func (r *remoteDir) counts(rel string) (stats, puts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats[rel], r.puts[rel]
}

// An archive put ahead into a remote tree is there, listed nowhere, until
// the publication, which lists it without writing it or asking the store
// about it again. A local tree, and a path that holds a file, get
// nothing.
func TestPutArchiveAhead(t *testing.T) {
	ctx := context.Background()
	tr := openTree(t)
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	rel := ArchivePath(p, v, plat)
	const content = "the linux_amd64 archive"
	a := Archive{Platform: plat, Staged: stage(t, tr, "foo.zip", content), Hashes: []hashing.Hash{hashing.ZH(sha256.Sum256([]byte(content)))}}

	if err := NewTree(tr.Store).PutArchiveAhead(ctx, p, v, a); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Store.Stat(ctx, rel); err == nil {
		t.Fatalf("%s was written ahead into a local tree", rel)
	}

	remote := &remoteDir{Store: tr.Store, stats: map[string]int{}, puts: map[string]int{}}
	tree := NewTree(remote)
	for range 2 {
		if err := tree.PutArchiveAhead(ctx, p, v, a); err != nil {
			t.Fatal(err)
		}
	}
	if got := readTreeFile(t, tr, rel); got != content {
		t.Errorf("%s holds %q after it was put ahead", rel, got)
	}
	if _, puts := remote.counts(rel); puts != 1 {
		t.Errorf("%s was written %d times; want once, the file there the second time", rel, puts)
	}
	if _, err := tr.Store.Stat(ctx, VersionPath(p, v)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists before the publication (%v)", VersionPath(p, v), err)
	}

	statsBefore, _ := remote.counts(rel)
	if _, err := tree.PublishAll(ctx, Repair, []Release{{Provider: p, Version: v, Archives: []Archive{a}}}); err != nil {
		t.Fatal(err)
	}
	if stats, puts := remote.counts(rel); stats != statsBefore || puts != 1 {
		t.Errorf("the publication asked the store about %s %d times and wrote it %d times; want neither", rel, stats-statsBefore, puts-1)
	}
	if doc := readTreeFile(t, tr, VersionPath(p, v)); !strings.Contains(doc, ArchiveName(p, v, plat)) {
		t.Errorf("%s does not list the archive:\n%s", VersionPath(p, v), doc)
	}
}

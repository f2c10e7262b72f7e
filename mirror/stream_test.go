package mirror

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// cutOnce is a source whose first download of each archive stops half way
// with an error, as a dropped connection would, leaving a partial download.
type cutOnce struct {
	*fakeSource
	mu  sync.Mutex // guards cut: archives are fetched at once
	cut map[string]bool
}

func (c *cutOnce) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	return c.packageMetaVia(ctx, p, v, plat, c)
}

func (c *cutOnce) fetchFile(ctx context.Context, name string, w Sink) error {
	c.mu.Lock()
	first := strings.HasSuffix(name, ".zip") && !c.cut[name]
	c.cut[name] = true
	c.mu.Unlock()
	if !first {
		return c.fakeSource.fetchFile(ctx, name, w)
	}
	c.fakeSource.mu.Lock()
	body := c.files[name]
	c.fakeSource.mu.Unlock()
	if _, err := w.Write(body[:len(body)/2]); err != nil {
		return err
	}
	return errors.New("connection reset by peer")
}

func buildWith(t *testing.T, root string, src Source) (*Builder, *Report) {
	t.Helper()
	tree, err := layout.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &Builder{Source: src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: Options{}}
	return b, b.Build(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")})
}

// A build takes each archive's h1: hashes from the entries hashed while it
// downloaded; a resumed download, whose first bytes were not streamed,
// falls back to hashing the file, with the same hashes.
func TestBuildSummarizesFromTheStream(t *testing.T) {
	src := newFakeSource()
	src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")

	clean := t.TempDir()
	b, r := buildWith(t, clean, src)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if got := b.summarized.Load(); got != 2 {
		t.Errorf("%d of 2 archives were summarized from the stream", got)
	}

	resumed := t.TempDir()
	cut := &cutOnce{fakeSource: src, cut: map[string]bool{}}
	if _, r := buildWith(t, resumed, cut); r.Err() == nil {
		t.Fatal("the cut downloads succeeded")
	}
	b, r = buildWith(t, resumed, cut)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if got := b.summarized.Load(); got != 0 {
		t.Errorf("%d resumed archives were summarized from a stream that missed their first bytes", got)
	}
	want := readTree(t, clean, fooDir+"1.0.0.json")
	if got := readTree(t, resumed, fooDir+"1.0.0.json"); got != want {
		t.Errorf("the resumed build publishes\n%s\nthe clean one\n%s", got, want)
	}
}

func readTree(t *testing.T, root, rel string) string {
	t.Helper()
	return (&harness{root: root}).read(t, rel)
}

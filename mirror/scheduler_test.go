package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// slowSource delays archive fetches and records how many run at once.
type slowSource struct {
	*fakeSource
	delay    time.Duration
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func (s *slowSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	return s.packageMetaVia(ctx, p, v, plat, s)
}

func (s *slowSource) fetchFile(ctx context.Context, name string, w Sink) error {
	if !strings.HasSuffix(name, ".zip") {
		return s.fakeSource.fetchFile(ctx, name, w)
	}
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.fakeSource.fetchFile(ctx, name, w)
}

func manyReleases(src *fakeSource, n int) {
	for i := range n {
		src.add("hashicorp/foo", fmt.Sprintf("1.%d.0", i), "linux_amd64", "darwin_arm64")
	}

}

func TestDownloadsRespectTheLimit(t *testing.T) {
	h := newHarness(t)
	manyReleases(h.src, 6)
	src := &slowSource{fakeSource: h.src, delay: 30 * time.Millisecond}
	tree, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &Builder{Source: src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: Options{Parallel: 3}}
	r := b.Build(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")})
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 12 {
		t.Fatalf("err %v, %d mirrored", err, r.Count(StatusMirrored))
	}
	if got := src.maxSeen.Load(); got != 3 {
		t.Errorf("at most %d downloads ran at once, want exactly the limit 3", got)
	}
}

func TestCancellingMidBuildLeavesAConsistentTree(t *testing.T) {
	h := newHarness(t)
	manyReleases(h.src, 8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	src := &slowSource{fakeSource: h.src, delay: 20 * time.Millisecond}
	tree, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	// Ctrl-C once the first package is published: a few are, most not,
	// however slow the machine.
	onEvent := func(e Event) {
		if e.Result != nil && e.Result.Status == StatusMirrored {
			once.Do(cancel)
		}
	}
	b := &Builder{Source: src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: Options{Parallel: 2, OnEvent: onEvent}}
	r := b.Build(ctx, []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")})
	if err := tree.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Count(StatusMirrored) == 0 || r.Count(StatusMirrored) == 16 {
		t.Fatalf("%d packages mirrored: the cancellation did not land mid-build", r.Count(StatusMirrored))
	}
	if rep := verifyTree(t, h.root); len(rep.Problems) != 0 {
		t.Errorf("the tree after Ctrl-C has problems: %v", rep.Problems)
	}
	// The next run completes it.
	r = h.rebuild(t, Options{}, requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64"))
	if err := r.Err(); err != nil || r.Count(StatusMirrored)+r.Count(StatusPresent) != 16 {
		t.Fatalf("rerun: err %v, statuses %v", err, statuses(r))
	}
}

package mirror

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/layout"
)

// rebuild builds with the existing tree known, as the CLI does.
func (h *harness) rebuild(t *testing.T, opts Options, reqs ...Requirement) *Report {
	t.Helper()
	tree, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: opts}
	return b.Build(context.Background(), reqs)
}

func (s *fakeSource) totalFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.fetches {
		n += c
	}
	return n
}

func TestNoOpRebuildMakesNoRequestsButTheVersionList(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	req := requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")
	if err := h.build(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	before, metas := h.src.totalFetches(), h.src.metaCalls
	snap := h.snapshot(t)
	r := h.rebuild(t, Options{}, req)
	if err := r.Err(); err != nil || r.Count(StatusPresent) != 2 {
		t.Fatalf("err %v, statuses %v", err, statuses(r))
	}
	if h.src.totalFetches() != before || h.src.metaCalls != metas {
		t.Errorf("a no-op rebuild made %d fetches and %d metadata requests", h.src.totalFetches()-before, h.src.metaCalls-metas)
	}
	for path, sum := range snap {
		if h.snapshot(t)[path] != sum {
			t.Errorf("%s changed", path)
		}
	}
}

func TestRebuildDetectsNewVersionsAndDamage(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	req := requirement(t, "hashicorp/foo", "", "linux_amd64")
	if err := h.build(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(h.root, fooDir+"terraform-provider-foo_1.0.0_linux_amd64.zip")

	// A new upstream version is found and mirrored.
	h.src.add("hashicorp/foo", "1.1.0", "linux_amd64")
	r := h.rebuild(t, Options{}, req)
	if got := statuses(r); got["registry.opentofu.org/hashicorp/foo 1.1.0 linux_amd64"] != StatusMirrored || got["registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"] != StatusPresent {
		t.Errorf("after a new upstream version: %v", got)
	}

	// A damaged archive of another size is replaced.
	write(t, archive, "damaged")
	r = h.rebuild(t, Options{}, req)
	if statuses(r)["registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"] != StatusMirrored {
		t.Errorf("a truncated archive was kept: %v", statuses(r))
	}

	// Same size, different bytes: only --verify-existing notices.
	flipByte(t, archive)
	r = h.rebuild(t, Options{}, req)
	if statuses(r)["registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"] != StatusPresent {
		t.Errorf("without VerifyExisting a same-size archive is trusted by its size: %v", statuses(r))
	}
	r = h.rebuild(t, Options{VerifyExisting: true}, req)
	if statuses(r)["registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"] != StatusMirrored {
		t.Errorf("VerifyExisting did not replace a corrupted archive: %v", statuses(r))
	}
	if rep := verifyTree(t, h.root); len(rep.Problems) != 0 {
		t.Errorf("tree after repair: %v", rep.Problems)
	}
}

func TestRebuildCompletesAReleaseKilledBeforeItsIndex(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	h.src.add("hashicorp/foo", "1.1.0", "linux_amd64")
	req := requirement(t, "hashicorp/foo", "", "linux_amd64")
	if err := h.build(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	// As if killed after 1.1.0's archives, provenance and <version>.json,
	// but before index.json listed it.
	replaceIn(t, filepath.Join(h.root, fooDir+"index.json"), `,
    "1.1.0": {}`, "")
	if err := h.rebuild(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	if idx := h.read(t, fooDir+"index.json"); !strings.Contains(idx, `"1.1.0"`) {
		t.Errorf("the rebuild did not complete the index: %s", idx)
	}
	if _, err := os.Stat(filepath.Join(h.root, fooDir+"1.1.0.json")); err != nil {
		t.Error(err)
	}
}

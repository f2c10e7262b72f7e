package mirror

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// gatedSource holds the download of one archive until ready says so (or
// a few seconds have passed), and records what listed said then.
type gatedSource struct {
	*fakeSource
	gated  string      // suffix of the name of the file held
	ready  func() bool // the archive put ahead is there
	listed func() bool // the release is visible already

	sawReady, sawListed bool
}

func (s *gatedSource) PackageMeta(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (PackageMeta, error) {
	return s.packageMetaVia(ctx, p, v, plat, s)
}

func (s *gatedSource) fetchFile(ctx context.Context, name string, w Sink) error {
	if strings.HasSuffix(name, s.gated) {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if s.ready() {
				s.sawReady, s.sawListed = true, s.listed()
				break
			}
		}
	}
	return s.fakeSource.fetchFile(ctx, name, w)
}

// remoteStore is a directory store seen only through layout.Store, as a
// bucket is: the tree cannot reach its files on the local filesystem.
type remoteStore struct{ layout.Store }

// An archive of a release that is ready goes into a tree that is not on
// the local filesystem (a bucket) while the release's other archives still
// download, unlisted until the publication, which then finds it in place.
func TestArchivesGoIntoRemoteTreesWhileOthersDownload(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	dir, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	exists := func(rel string) func() bool {
		return func() bool { _, err := dir.Store.Stat(context.Background(), rel); return err == nil }
	}
	src := &gatedSource{fakeSource: h.src, gated: "darwin_arm64.zip",
		ready: exists(layout.ArchivePath(p, v, addrs.MustParsePlatform("linux_amd64"))), listed: exists(layout.VersionPath(p, v))}
	b := &Builder{Source: src, Checker: fakeChecker{}, Dests: []Destination{layout.NewTree(remoteStore{dir.Store}).Destination()}, Work: dir.Workspace}
	r := b.Build(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")})
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 2 {
		t.Fatalf("err %v, statuses %v", err, statuses(r))
	}
	if !src.sawReady || src.sawListed {
		t.Errorf("while darwin_arm64 downloaded: linux_amd64's archive in the tree %v (want true), %s written %v (want false)",
			src.sawReady, layout.VersionPath(p, v), src.sawListed)
	}
	if rep := verifyTree(t, h.root); len(rep.Problems) != 0 {
		t.Errorf("the tree has problems: %v", rep.Problems)
	}
}

// aheadRegistry is a memRegistry that takes archives ahead, or refuses
// them with refuse.
type aheadRegistry struct {
	*memRegistry
	refuse error
	ahead  []string // "provider version platform", in the order taken
}

func (a *aheadRegistry) PutArchiveAhead(_ context.Context, p addrs.Provider, v addrs.Version, arc layout.Archive) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ahead = append(a.ahead, p.String()+" "+v.String()+" "+arc.Platform.String())
	return a.refuse
}

func (a *aheadRegistry) taken() (ahead, published int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.ahead), len(a.published)
}

// A registry that takes archives ahead (an OCI registry, as blobs) gets
// each one while the release's other archives still download, before the
// release is published into it.
func TestArchivesGoIntoRegistriesWhileOthersDownload(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	reg := &aheadRegistry{memRegistry: &memRegistry{held: map[string]map[addrs.Platform]layout.HeldPackage{}}}
	src := &gatedSource{fakeSource: h.src, gated: "darwin_arm64.zip",
		ready:  func() bool { n, _ := reg.taken(); return n > 0 },
		listed: func() bool { _, n := reg.taken(); return n > 0 }}
	b := &Builder{Source: src, Checker: fakeChecker{}, Dests: []Destination{reg}, Work: workspace(t)}
	r := b.Build(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")})
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 2 {
		t.Fatalf("err %v, statuses %v", err, statuses(r))
	}
	if !src.sawReady || src.sawListed {
		t.Errorf("while darwin_arm64 downloaded: linux_amd64 taken ahead %v (want true), the release published %v (want false)", src.sawReady, src.sawListed)
	}
	if n, pub := reg.taken(); n != 2 || pub != 2 {
		t.Errorf("the registry took %d archives ahead and was published %d packages; want 2 and 2", n, pub)
	}
}

// A destination that fails to take an archive ahead is not asked to
// publish the release (the store would be asked the same thing again):
// its failure is the release's, named in each package's result; and it
// takes no more archives ahead in the build.
func TestAFailureAheadIsThePublications(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	refused := errors.New("upload refused: AccessDenied")
	reg := &aheadRegistry{memRegistry: &memRegistry{held: map[string]map[addrs.Platform]layout.HeldPackage{}}, refuse: refused}
	b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{reg}, Work: workspace(t)}
	r := b.Build(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "", "linux_amd64")})
	if r.Count(StatusFailed) != 1 {
		t.Fatalf("statuses %v; want the package failed", statuses(r))
	}
	res := r.Results[0]
	if !errors.Is(res.Err, refused) || res.Reason != "publish" || !strings.Contains(res.Err.Error(), "mem://registry") {
		t.Errorf("the result is %q, %v; want a publish failure into mem://registry wrapping %q", res.Reason, res.Err, refused)
	}
	if n, pub := reg.taken(); n != 1 || pub != 0 {
		t.Errorf("the registry was asked %d times ahead and published %d packages; want 1 and 0", n, pub)
	}

	// After the failure, the build puts nothing more ahead into it: each
	// release's publication writes its archives.
	b.ahead = b.aheadDests()
	foo := func(plat string) fetched {
		return fetched{pkg: Package{Provider: addrs.MustParseProvider("hashicorp/foo"), Version: addrs.MustParseVersion("1.0.0"), Platform: addrs.MustParsePlatform(plat)}}
	}
	if errs := b.putAhead(context.Background(), foo("linux_amd64")); !errors.Is(errs[0], refused) {
		t.Errorf("the first archive put ahead: %v; want %q", errs[0], refused)
	}
	if errs := b.putAhead(context.Background(), foo("darwin_arm64")); errs[0] != nil {
		t.Errorf("the second archive put ahead: %v; want nothing asked", errs[0])
	}
	if n, _ := reg.taken(); n != 2 {
		t.Errorf("the registry was asked %d times ahead in all; want 2 (the build's, then once after the reset)", n)
	}
}

// workspace is a workspace of its own for a build without a tree.
func workspace(t *testing.T) *layout.Workspace {
	t.Helper()
	w, err := layout.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

package mirror

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// netLocation is a location fetched over a network, as a registry's are:
// from origin (plain http or not), with a size it tells, or a failure to.
type netLocation struct {
	Location
	origin  string
	size    int64
	sizeErr error
}

func (l netLocation) Insecure() bool                      { return strings.HasPrefix(l.origin, "http:") }
func (l netLocation) Origin() string                      { return l.origin }
func (l netLocation) Size(context.Context) (int64, error) { return l.size, l.sizeErr }

// A release whose documents come over plain http is warned about once,
// naming the fields and only the origins they come from; it is still
// verified and mirrored.
func TestPlainHTTPIsWarnedAboutByOrigin(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	for k, m := range h.src.metas {
		m.Archive = netLocation{Location: m.Archive, origin: "http://cdn.example.com"}
		m.Sums = netLocation{Location: m.Sums, origin: "http://registry.example.com:8080"}
		m.Signature = netLocation{Location: m.Signature, origin: "https://registry.example.com"}
		h.src.metas[k] = m
	}
	r := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64"))
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 2 {
		t.Fatalf("err %v, statuses %v", err, statuses(r))
	}
	want := "registry.opentofu.org/hashicorp/foo 1.0.0: the registry serves download_url, shasums_url over plain http (http://cdn.example.com, http://registry.example.com:8080); the bytes are still checked against the release's checksums, but anyone on the network path sees what is fetched"
	var plain []string
	for _, w := range r.Warnings {
		if strings.Contains(w, "plain http") {
			plain = append(plain, w)
		}
	}
	if len(plain) != 1 || plain[0] != want {
		t.Errorf("plain http warnings %q, want only %q", plain, want)
	}
}

// A dry run asks each archive's location for its size, when it can tell
// one, and downloads nothing.
func TestDryRunAsksArchiveLocationsForSizes(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	sized := func(plat string, size int64, err error) {
		k := key(p, v, mustPlatforms(plat)[0])
		m := h.src.metas[k]
		m.Archive = netLocation{Location: m.Archive, origin: "https://cdn.example.com", size: size, sizeErr: err}
		h.src.metas[k] = m
	}
	sized("linux_amd64", 1234, nil)
	sized("darwin_arm64", 0, errors.New("HEAD https://cdn.example.com/foo.zip: 403 Forbidden, length -1"))
	tree, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace}
	plan, err := b.Plan(context.Background(), []Requirement{requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")})
	if err != nil {
		t.Fatal(err)
	}
	r := b.DryRun(context.Background(), plan)
	want := map[string]Result{
		"linux_amd64":   {Status: StatusPlanned, Bytes: 1234},
		"darwin_arm64":  {Status: StatusPlanned, Reason: "size unknown: HEAD https://cdn.example.com/foo.zip: 403 Forbidden, length -1"},
		"windows_amd64": {Status: StatusPlanned}, // its location tells no size
	}
	if len(r.Results) != len(want) {
		t.Fatalf("results %v, want %d", statuses(r), len(want))
	}
	for _, res := range r.Results {
		w := want[res.Platform.String()]
		if res.Status != w.Status || res.Bytes != w.Bytes || res.Reason != w.Reason {
			t.Errorf("%s: %s %d %q, want %s %d %q", res.Platform, res.Status, res.Bytes, res.Reason, w.Status, w.Bytes, w.Reason)
		}
	}
	if n := h.src.totalFetches(); n != 0 {
		t.Errorf("a dry run fetched %d files", n)
	}
}

// A routed build takes each package's documents from the upstream that
// described it: the mirror's from the mirror, the origin's from the
// origin. A mirror's locations name the mirror and the package, no URL.
func TestRoutedPackagesComeFromTheirRoute(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	h.src.add("hashicorp/bar", "1.0.0", "linux_amd64")
	if err := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64")).Err(); err != nil {
		t.Fatal(err)
	}
	treeA, err := layout.OpenExisting(h.root)
	if err != nil {
		t.Fatal(err)
	}
	fromMirror := &MirrorSource{Mirror: treeA}
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), mustPlatforms("linux_amd64")[0]
	meta, err := fromMirror.PackageMeta(context.Background(), p, v, plat)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		loc  Location
		want string
	}{
		{meta.Archive, h.root + ": registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"},
		{meta.Sums, h.root + ": registry.opentofu.org/hashicorp/foo 1.0.0 SHA256SUMS"},
		{meta.Signature, h.root + ": registry.opentofu.org/hashicorp/foo 1.0.0 SHA256SUMS signature"},
	} {
		if got := tt.loc.String(); got != tt.want {
			t.Errorf("location %q, want %q", got, tt.want)
		}
	}

	before := map[string]int{}
	for _, name := range []string{"foo_1.0.0_linux_amd64.zip", "foo/1.0.0/SHA256SUMS", "bar_1.0.0_linux_amd64.zip", "bar/1.0.0/SHA256SUMS"} {
		before[name] = h.src.fetchCount(name)
	}
	routed := &RoutedSource{Routes: []Route{
		{Name: "network_mirror A", Include: []string{"registry.opentofu.org/hashicorp/foo"}, Source: fromMirror},
		{Name: "direct", Source: h.src},
	}}
	r := buildFrom(t, t.TempDir(), routed, TrustPolicy{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"), requirement(t, "hashicorp/bar", "1.0.0", "linux_amd64"))
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 2 {
		t.Fatalf("err %v, statuses %v", err, statuses(r))
	}
	for name, want := range map[string]int{"foo_1.0.0_linux_amd64.zip": 0, "foo/1.0.0/SHA256SUMS": 0, "bar_1.0.0_linux_amd64.zip": 1, "bar/1.0.0/SHA256SUMS": 1} {
		if got := h.src.fetchCount(name) - before[name]; got != want {
			t.Errorf("%s fetched from the origin %d times, want %d", name, got, want)
		}
	}
}

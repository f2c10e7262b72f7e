package mirror

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"

	"github.com/tfmirror/tfmirror/layout"
)

type harness struct {
	src  *fakeSource
	root string
}

func newHarness(t *testing.T) *harness {
	return &harness{src: newFakeSource(), root: t.TempDir()}
}

func (h *harness) build(t *testing.T, opts Options, reqs ...Requirement) *Report {
	t.Helper()
	tree, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: opts}
	return b.Build(context.Background(), reqs)
}

func (h *harness) read(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (h *harness) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(h.root, rel))
	return err == nil
}

// stagingLeft reports whether a staging area is left in the tree's
// private directory once the build has ended: a workspace's run, or the
// shared staging area of older versions.
func (h *harness) stagingLeft() bool {
	runs, _ := filepath.Glob(filepath.Join(h.root, layout.PrivateDirName, "run-*"))
	return len(runs) > 0 || h.exists(layout.StagingDirName)
}

// snapshot returns the SHA-256 of every file in the tree.
func (h *harness) snapshot(t *testing.T) map[string][sha256.Size]byte {
	t.Helper()
	out := map[string][sha256.Size]byte{}
	err := filepath.WalkDir(h.root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == layout.PrivateDirName {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[path] = sha256.Sum256(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func statuses(r *Report) map[string]Status {
	out := map[string]Status{}
	for _, res := range r.Results {
		out[res.String()] = res.Status
	}
	return out
}

const fooDir = "registry.opentofu.org/hashicorp/foo/"

func TestBuildMirrorsEveryMatchingVersion(t *testing.T) {
	h := newHarness(t)
	for _, v := range []string{"0.9.0", "1.0.0", "1.1.0", "1.2.0-beta1", "2.0.0"} {
		h.src.add("hashicorp/foo", v, "linux_amd64", "darwin_arm64")
	}
	r := h.build(t, Options{}, requirement(t, "hashicorp/foo", "~> 1.0", "linux_amd64", "darwin_arm64"))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if got := r.Count(StatusMirrored); got != 4 {
		t.Errorf("mirrored %d packages, want 4: %v", got, statuses(r))
	}
	want := "{\n  \"versions\": {\n    \"1.0.0\": {},\n    \"1.1.0\": {}\n  }\n}"
	if got := h.read(t, fooDir+"index.json"); got != want {
		t.Errorf("index.json = %s", got)
	}
	doc, err := layout.DecodeVersion([]byte(h.read(t, fooDir+"1.1.0.json")))
	if err != nil {
		t.Fatal(err)
	}
	for _, plat := range []string{"darwin_arm64", "linux_amd64"} {
		e := doc.Archives[plat]
		if e.URL != "terraform-provider-foo_1.1.0_"+plat+".zip" || len(e.Hashes) != 2 {
			t.Errorf("%s entry = %+v", plat, e)
		}
		if !strings.HasPrefix(string(e.Hashes[0]), "h1:") || !strings.HasPrefix(string(e.Hashes[1]), "zh:") {
			t.Errorf("%s hashes = %v, want h1 then zh", plat, e.Hashes)
		}
	}
	if h.stagingLeft() {
		t.Error("staging directory left behind")
	}
}

func TestBuildNewestKeepsOnlyLatestMatches(t *testing.T) {
	h := newHarness(t)
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"} {
		h.src.add("hashicorp/foo", v, "linux_amd64")
	}
	req := requirement(t, "hashicorp/foo", "< 2.0.0", "linux_amd64")
	req.Newest = 2
	if err := h.build(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"versions\": {\n    \"1.1.0\": {},\n    \"1.2.0\": {}\n  }\n}"
	if got := h.read(t, fooDir+"index.json"); got != want {
		t.Errorf("index.json = %s", got)
	}
}

func TestBuildFetchesSumsOncePerRelease(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")
	if err := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "windows_amd64")).Err(); err != nil {
		t.Fatal(err)
	}
	if n := h.src.fetchCount("/SHA256SUMS"); n != 1 {
		t.Errorf("SHA256SUMS fetched %d times, want 1", n)
	}
	if n := h.src.fetchCount("/SHA256SUMS.sig"); n != 1 {
		t.Errorf("signature fetched %d times, want 1", n)
	}
}

func TestBuildMissingPlatform(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			h := newHarness(t)
			h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
			r := h.build(t, Options{Strict: strict}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "freebsd_arm"))
			got := statuses(r)["registry.opentofu.org/hashicorp/foo 1.0.0 freebsd_arm"]
			if want := map[bool]Status{false: StatusSkipped, true: StatusFailed}[strict]; got != want {
				t.Errorf("freebsd_arm status = %s, want %s", got, want)
			}
			if (r.Err() != nil) != strict {
				t.Errorf("Err() = %v", r.Err())
			}
			if !strict && !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, "freebsd_arm") }) {
				t.Errorf("no warning names the missing platform: %v", r.Warnings)
			}
			if !h.exists(fooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip") {
				t.Error("the available platform was not published")
			}
		})
	}
}

func TestBuildSigningPolicy(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		keys     []string
		sig      string
		require  bool
		wantErr  string
	}{
		{name: "valid signature", provider: "hashicorp/foo", keys: []string{"good"}, sig: "signed-by:good"},
		{name: "second key signs", provider: "hashicorp/foo", keys: []string{"other", "good"}, sig: "signed-by:good"},
		{name: "bad signature", provider: "hashicorp/foo", keys: []string{"good"}, sig: "signed-by:evil", wantErr: "SHA256SUMS signature is not valid"},
		{name: "no keys on default registry", provider: "hashicorp/foo"},
		{name: "no keys with require-signatures", provider: "hashicorp/foo", require: true, wantErr: "advertises no signing keys"},
		{name: "no keys on another registry", provider: "example.com/hashicorp/foo", wantErr: "advertises no signing keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.src.add(tt.provider, "1.0.0", "linux_amd64")
			for k, m := range h.src.metas {
				m.SigningKeys = tt.keys
				h.src.metas[k] = m
			}
			for u := range h.src.files {
				if strings.HasSuffix(u, ".sig") {
					h.src.files[u] = []byte(tt.sig)
				}
			}
			refuse := tt.require
			r := h.build(t, Options{Trust: TrustPolicy{Default: TrustRule{RefuseUnsigned: &refuse}}}, requirement(t, tt.provider, "1.0.0", "linux_amd64"))
			err := r.Err()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(tt.keys) == 0 && len(r.Warnings) == 0 {
					t.Error("skipping the signature check was not warned about")
				}
				return
			}
			var verr *VerificationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want VerificationError containing %q", err, tt.wantErr)
			}
			if h.exists(strings.Replace(fooDir, "registry.opentofu.org", string(addrs.MustParseProvider(tt.provider).Hostname), 1) + "index.json") {
				t.Error("an unverified release was published")
			}
		})
	}
}

func TestBuildRefusesArchivesThatDoNotMatch(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(s *fakeSource)
		wantErr string
	}{
		{"tampered archive", func(s *fakeSource) {
			u := "registry.opentofu.org/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_linux_amd64.zip"
			s.files[u] = append(slices.Clone(s.files[u]), 0)
		}, "archive has checksum"},
		{"shasum differs from SHA256SUMS", func(s *fakeSource) {
			k := "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"
			m := s.metas[k]
			m.SHA256[0] ^= 1
			s.metas[k] = m
		}, "does not match SHA256SUMS"},
		{"filename not in SHA256SUMS", func(s *fakeSource) {
			k := "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"
			m := s.metas[k]
			m.Filename = "other.zip"
			s.metas[k] = m
		}, `no line for "other.zip"`},
		{"malformed SHA256SUMS", func(s *fakeSource) {
			s.files["registry.opentofu.org/hashicorp/foo/1.0.0/SHA256SUMS"] = []byte("nonsense\n")
		}, "SHA256SUMS is malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
			tt.corrupt(h.src)
			r := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64"))
			var verr *VerificationError
			if err := r.Err(); !errors.As(err, &verr) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want VerificationError containing %q", err, tt.wantErr)
			}
			if !strings.Contains(verr.Error(), "registry.opentofu.org/hashicorp/foo 1.0.0") {
				t.Errorf("error does not name the package: %v", verr)
			}
			if h.exists(fooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip") {
				t.Error("the refused archive was published")
			}
			if h.stagingLeft() {
				t.Error("staging directory left behind")
			}
		})
	}
}

func TestBuildKeepsGoingAfterPackageFailures(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "freebsd_arm", "windows_amd64")
	h.src.add("hashicorp/bar", "1.0.0", "linux_amd64")
	h.src.failURL["registry.opentofu.org/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_darwin_arm64.zip"] = errors.New("connection reset")
	r := h.build(t, Options{},
		requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64"),
		requirement(t, "hashicorp/bar", "", "linux_amd64"),
	)
	got := statuses(r)
	// foo 1.0.0, new to the tree, is held back whole: listed with
	// linux_amd64 alone, it would be the version darwin_arm64 clients
	// select and fail on.
	if got["registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"] != StatusHeld ||
		got["registry.opentofu.org/hashicorp/bar 1.0.0 linux_amd64"] != StatusMirrored ||
		got["registry.opentofu.org/hashicorp/foo 1.0.0 darwin_arm64"] != StatusFailed {
		t.Errorf("statuses = %v", got)
	}
	if h.exists(fooDir+"1.0.0.json") || h.exists(fooDir+"terraform-provider-foo_1.0.0_linux_amd64.zip") {
		t.Error("a release with a platform that failed was published without it")
	}
	err := r.Err()
	var pkgErr *PackageError
	if !errors.As(err, &pkgErr) || !strings.Contains(err.Error(), "connection reset") {
		t.Errorf("err = %v", err)
	}
	var verr *VerificationError
	if errors.As(err, &verr) {
		t.Errorf("transport failures must not count as verification failures: %v", err)
	}

	// Once the platform comes, the release is published whole; a
	// platform of a release the tree holds is added as it comes.
	delete(h.src.failURL, "registry.opentofu.org/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_darwin_arm64.zip")
	r = h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64"))
	if err := r.Err(); err != nil || !h.exists(fooDir+"1.0.0.json") || !h.exists(fooDir+"terraform-provider-foo_1.0.0_darwin_arm64.zip") {
		t.Fatalf("the build after the failure: %v, %v", err, statuses(r))
	}
	h.src.failURL["registry.opentofu.org/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_windows_amd64.zip"] = errors.New("connection reset")
	r = h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64", "freebsd_arm", "windows_amd64"))
	if got := statuses(r); got["registry.opentofu.org/hashicorp/foo 1.0.0 freebsd_arm"] != StatusMirrored || got["registry.opentofu.org/hashicorp/foo 1.0.0 windows_amd64"] != StatusFailed {
		t.Errorf("a new platform of a release the tree holds: statuses = %v", got)
	}
}

func TestUnresolvablePlanPublishesNothing(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	h.src.listErr["registry.opentofu.org/hashicorp/baz"] = fmt.Errorf("listing: %w", ErrProviderUnknown)
	h.src.listErr["registry.opentofu.org/hashicorp/qux"] = errors.New("registry unreachable")
	r := h.build(t, Options{},
		requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"),
		requirement(t, "hashicorp/baz", "", "linux_amd64"),
		requirement(t, "hashicorp/qux", "", "linux_amd64"),
	)
	if len(r.Results) != 0 || h.exists(fooDir+"index.json") {
		t.Errorf("a build whose plan failed published something: %v", statuses(r))
	}
	inputs := map[string]bool{}
	for _, e := range r.Errors {
		for _, leaf := range e.(interface{ Unwrap() []error }).Unwrap() {
			var rerr *ResolveError
			if !errors.As(leaf, &rerr) {
				t.Fatalf("%v is not a ResolveError", leaf)
			}
			inputs[rerr.Provider.Type] = rerr.Input
		}
	}
	if want := map[string]bool{"baz": true, "qux": false}; fmt.Sprint(inputs) != fmt.Sprint(want) {
		t.Errorf("input classification = %v, want %v", inputs, want)
	}
}

func TestBuildRejectsProvidersItCannotMirror(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	r := h.build(t, Options{},
		requirement(t, "hashicorp/foo", ">= 3.0.0", "linux_amd64"),
		requirement(t, "localhost:8443/acme/bar", "", "linux_amd64"),
	)
	msg := fmt.Sprint(r.Err())
	for _, want := range []string{`no released version matches ">= 3.0.0" (newest available: 1.0.0)`, "has a port in its hostname"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
}

func TestRebuildReusesArchivesAndMerges(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	if err := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64")).Err(); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot(t)
	h.src.add("hashicorp/foo", "1.1.0", "linux_amd64")
	r := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.1.0", "linux_amd64"))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n := h.src.fetchCount("foo_1.0.0_linux_amd64.zip"); n != 1 {
		t.Errorf("1.0.0 archive fetched %d times", n)
	}
	after := h.snapshot(t)
	for path, sum := range before {
		if !strings.HasSuffix(path, "index.json") && after[path] != sum {
			t.Errorf("%s changed", path)
		}
	}
	want := "{\n  \"versions\": {\n    \"1.0.0\": {},\n    \"1.1.0\": {}\n  }\n}"
	if got := h.read(t, fooDir+"index.json"); got != want {
		t.Errorf("index.json after merge = %s", got)
	}
	r = h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.1.0", "linux_amd64"))
	if r.Count(StatusPresent) != 1 || h.src.fetchCount("foo_1.1.0_linux_amd64.zip") != 1 {
		t.Errorf("rebuild re-downloaded: %v", statuses(r))
	}
}

func TestRebuildReplacesDamagedArchive(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	req := requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64")
	if err := h.build(t, Options{}, req).Err(); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(h.root, fooDir+"terraform-provider-foo_1.0.0_linux_amd64.zip")
	if err := os.WriteFile(archive, []byte("damaged"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.build(t, Options{}, req)
	if err := r.Err(); err != nil || r.Count(StatusMirrored) != 1 {
		t.Fatalf("err = %v, statuses = %v", err, statuses(r))
	}
	got, _ := os.ReadFile(archive)
	if sha256.Sum256(got) != h.src.metas["registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64"].SHA256 {
		t.Error("damaged archive was not replaced")
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	var trees []map[string][sha256.Size]byte
	for range 2 {
		h := newHarness(t)
		for _, v := range []string{"1.0.0", "1.10.0", "1.9.0"} {
			h.src.add("hashicorp/foo", v, "linux_amd64", "darwin_arm64", "windows_amd64")
		}
		h.src.add("example.com/acme/bar", "0.1.0", "linux_amd64")
		r := h.build(t, Options{Parallel: 3},
			requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64", "windows_amd64"),
			requirement(t, "example.com/acme/bar", "", "linux_amd64"))
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		rel := map[string][sha256.Size]byte{}
		for path, sum := range h.snapshot(t) {
			rel[strings.TrimPrefix(path, h.root)] = sum
		}
		trees = append(trees, rel)
	}
	if len(trees[0]) != len(trees[1]) {
		t.Fatalf("trees differ in size: %d vs %d", len(trees[0]), len(trees[1]))
	}
	for path, sum := range trees[0] {
		if trees[1][path] != sum {
			t.Errorf("%s differs between identical builds", path)
		}
	}
}

func TestBuildStopsCleanlyWhenCancelled(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	tree, err := layout.Open(h.root)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := &Builder{Source: h.src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace}
	r := b.Build(ctx, []Requirement{requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64")})
	if err := tree.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", r.Err())
	}
	if h.exists(fooDir+"index.json") || h.stagingLeft() {
		t.Error("a cancelled build left files behind")
	}
}

func TestReleaseFailureNamesEachPlatform(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	h.src.files["registry.opentofu.org/hashicorp/foo/1.0.0/SHA256SUMS.sig"] = []byte("signed-by:evil")
	r := h.build(t, Options{}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64"))
	for _, res := range r.Results {
		if res.Status != StatusFailed || !strings.Contains(res.Err.Error(), res.Platform.String()) {
			t.Errorf("%s: status %s, error %v does not name its platform", res.Package, res.Status, res.Err)
		}
	}
	if len(r.Results) != 2 {
		t.Errorf("%d results, want 2", len(r.Results))
	}
}

package mirror

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/layout"
)

// builtTree builds foo 1.0.0 and 1.1.0 for two platforms and returns a
// Locker over the resulting tree.
func builtTree(t *testing.T) (*harness, *Locker) {
	t.Helper()
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	h.src.add("hashicorp/foo", "1.1.0", "linux_amd64", "darwin_arm64")
	if err := h.build(t, Options{}, requirement(t, "hashicorp/foo", "", "linux_amd64", "darwin_arm64")).Err(); err != nil {
		t.Fatal(err)
	}
	tree, err := layout.OpenExisting(h.root)
	if err != nil {
		t.Fatal(err)
	}
	return h, &Locker{Mirror: tree, Checker: fakeChecker{}}
}

func need(provider string, constraints ...string) Need {
	return Need{Provider: addrs.MustParseProvider(provider), Constraints: constraints, Root: "root"}
}

func TestLockRecordsH1PerPlatformAndEveryZH(t *testing.T) {
	h, l := builtTree(t)
	entry, err := l.Lock(context.Background(), need("hashicorp/foo", "~> 1.0"), mustPlatforms("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if entry.Version.String() != "1.1.0" {
		t.Errorf("selected %s, want the newest allowed 1.1.0", entry.Version)
	}
	sums, err := hashing.ParseSums(h.src.files["registry.opentofu.org/hashicorp/foo/1.1.0/SHA256SUMS"])
	if err != nil {
		t.Fatal(err)
	}
	doc, err := layout.DecodeVersion([]byte(h.read(t, fooDir+"1.1.0.json")))
	if err != nil {
		t.Fatal(err)
	}
	want := append([]hashing.Hash{doc.Archives["linux_amd64"].Hashes[0]}, sums.ZHashes()...)
	if !slices.Equal(entry.Hashes, want) {
		t.Errorf("hashes = %v\nwant     %v", entry.Hashes, want)
	}
}

func TestLockWithoutPlatformsTakesAllMirrored(t *testing.T) {
	_, l := builtTree(t)
	entry, err := l.Lock(context.Background(), need("hashicorp/foo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range entry.Hashes {
		if strings.HasPrefix(string(h), "h1:") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d h1 hashes, want one per mirrored platform (2): %v", n, entry.Hashes)
	}
}

func TestLockHonoursLockedVersion(t *testing.T) {
	_, l := builtTree(t)
	n := need("hashicorp/foo", ">= 1.0.0")
	locked := addrs.MustParseVersion("1.0.0")
	n.Locked = &locked
	entry, err := l.Lock(context.Background(), n, mustPlatforms("linux_amd64"))
	if err != nil || entry.Version.String() != "1.0.0" {
		t.Fatalf("entry %v, err %v; want the locked 1.0.0", entry.Version, err)
	}
	n = need("hashicorp/foo", "~> 1.0")
	for v, want := range map[string]string{"2.0.0": "does not satisfy", "1.5.0": "does not hold"} {
		bad := addrs.MustParseVersion(v)
		n.Locked = &bad
		if _, err := l.Lock(context.Background(), n, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("locked %s: err = %v, want %q", v, err, want)
		}
	}
}

func TestLockErrors(t *testing.T) {
	h, l := builtTree(t)
	ctx := context.Background()
	if _, err := l.Lock(ctx, need("hashicorp/foo"), mustPlatforms("freebsd_arm")); err == nil || !strings.Contains(err.Error(), "freebsd_arm") {
		t.Errorf("missing platform: err = %v", err)
	}
	if _, err := l.Lock(ctx, need("hashicorp/foo", ">= 5.0.0"), nil); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("nothing matches: err = %v", err)
	}
	if _, err := l.Lock(ctx, need("hashicorp/absent"), nil); err == nil {
		t.Error("unknown provider: no error")
	}
	sig := filepath.Join(h.root, layout.SignaturePath(addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.1.0")))
	if err := os.WriteFile(sig, []byte("signed-by:evil"), 0o644); err != nil {
		t.Fatal(err)
	}
	var verr *VerificationError
	if _, err := l.Lock(ctx, need("hashicorp/foo"), nil); !errors.As(err, &verr) {
		t.Errorf("tampered kept signature: err = %v, want a VerificationError", err)
	}
}

func TestBuildKeepsProvenance(t *testing.T) {
	h, _ := builtTree(t)
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	tree, err := layout.OpenExisting(h.root)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := tree.ReadRecord(context.Background(), p, v)
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Sums) != string(h.src.files["registry.opentofu.org/hashicorp/foo/1.0.0/SHA256SUMS"]) {
		t.Error("kept SHA256SUMS differs from upstream")
	}
	if string(rec.Signature) != "signed-by:good" || !slices.Equal(rec.Provenance.SigningKeys, []string{"good"}) {
		t.Errorf("kept signature %q, keys %q", rec.Signature, rec.Provenance.SigningKeys)
	}
	if rec.Provenance.KeyID == "" || len(rec.Provenance.Archives) != 2 {
		t.Errorf("provenance = %+v", rec.Provenance)
	}
	for plat, a := range rec.Provenance.Archives {
		if !strings.HasPrefix(string(a.H1), "h1:") || !strings.Contains(a.Filename, plat) {
			t.Errorf("%s: %+v", plat, a)
		}
	}
}

func TestNeedRequirement(t *testing.T) {
	n := need("hashicorp/foo", "~> 1.0", ">= 1.1.0")
	req, err := n.Requirement(mustPlatforms("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]bool{"1.0.0": false, "1.1.0": true, "1.9.0": true, "2.0.0": false} {
		if got := req.Allowed.Has(addrs.MustParseVersion(v)); got != want {
			t.Errorf("Allowed.Has(%s) = %v, want %v", v, got, want)
		}
	}
	if req.Newest != 1 {
		t.Errorf("Newest = %d, want 1 (a configuration installs one version)", req.Newest)
	}
	locked := addrs.MustParseVersion("1.0.0")
	n.Locked = &locked
	if _, err := n.Requirement(nil); err == nil || !strings.Contains(err.Error(), "does not satisfy") {
		t.Errorf("contradicting lock: err = %v", err)
	}
	locked = addrs.MustParseVersion("1.2.0")
	req, err = n.Requirement(nil)
	if err != nil || !req.Allowed.Has(locked) || req.Allowed.Has(addrs.MustParseVersion("1.3.0")) {
		t.Errorf("locked requirement allows more than the locked version: %v", err)
	}
}

func TestSharedReleasesAreBuiltOnce(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64", "darwin_arm64")
	r := h.build(t, Options{},
		requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"),
		requirement(t, "hashicorp/foo", ">= 1.0.0", "linux_amd64", "darwin_arm64"),
	)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 2 || h.src.fetchCount("foo_1.0.0_linux_amd64.zip") != 1 {
		t.Errorf("results %v, linux archive fetched %d times", statuses(r), h.src.fetchCount("foo_1.0.0_linux_amd64.zip"))
	}
}

// A zip with directory entries has two h1: hashes, the zip's and the
// unpacked directory's: the lock records both, as OpenTofu does when it
// installs the package from a mirror that lists them.
func TestLockRecordsBothH1OfAZipWithDirectories(t *testing.T) {
	h := newHarness(t)
	h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	base, name := fmt.Sprintf("%s/%s", p, v), layout.ArchiveName(p, v, plat)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if _, err := zw.Create("docs/"); err != nil {
		t.Fatal(err)
	}
	w, err := zw.Create("terraform-provider-foo")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(w, "with a directory entry")
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	h.src.files[base+"/"+name] = buf.Bytes()
	h.src.files[base+"/SHA256SUMS"] = fmt.Appendf(nil, "%x  %s\n", sum, name)
	meta := h.src.metas[key(p, v, plat)]
	meta.SHA256 = sum
	h.src.metas[key(p, v, plat)] = meta
	if err := h.build(t, Options{}, requirement(t, "hashicorp/foo", "", "linux_amd64")).Err(); err != nil {
		t.Fatal(err)
	}
	tree, err := layout.OpenExisting(h.root)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := (&Locker{Mirror: tree, Checker: fakeChecker{}}).Lock(context.Background(), need("hashicorp/foo"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sums := entry.Packages[plat]
	if sums.H1 == sums.H1Unpacked {
		t.Fatalf("the zip's h1: equals the directory's (%s): the test zip has no directory entry", sums.H1)
	}
	want := []hashing.Hash{sums.H1Unpacked, sums.H1, hashing.ZH(sum)}
	slices.Sort(want)
	if !slices.Equal(entry.Hashes, want) {
		t.Errorf("hashes = %v\nwant     %v", entry.Hashes, want)
	}
}

// countingPackages counts the archives read through it.
type countingPackages struct {
	Packages
	mu     sync.Mutex
	opened map[string]int
}

func (c *countingPackages) OpenArchive(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (io.ReadCloser, error) {
	c.mu.Lock()
	c.opened[fmt.Sprintf("%s %s %s", p, v, plat)]++
	c.mu.Unlock()
	return c.Packages.OpenArchive(ctx, p, v, plat)
}

func TestLockHashesEachArchiveOnce(t *testing.T) {
	_, l := builtTree(t)
	counted := &countingPackages{Packages: l.Mirror, opened: map[string]int{}}
	l.Mirror = counted
	var first LockEntry
	for i := range 3 { // three lock files of one provider, or a check then a fix
		entry, err := l.Lock(t.Context(), need("hashicorp/foo", "1.1.0"), mustPlatforms("linux_amd64", "darwin_arm64"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = entry
		} else if !slices.Equal(entry.Hashes, first.Hashes) {
			t.Errorf("lock %d gave %v, the first %v", i, entry.Hashes, first.Hashes)
		}
	}
	want := map[string]int{"registry.opentofu.org/hashicorp/foo 1.1.0 linux_amd64": 1, "registry.opentofu.org/hashicorp/foo 1.1.0 darwin_arm64": 1}
	if !maps.Equal(counted.opened, want) {
		t.Errorf("archives read %v, want each once: %v", counted.opened, want)
	}
}

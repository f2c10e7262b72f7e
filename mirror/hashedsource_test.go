package mirror

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// memHashed is an upstream that lists packages with hashes only, in
// memory: what a network mirror of another tool or a filesystem mirror
// reader offers.
type memHashed struct {
	mu      sync.Mutex               // guards fetched: packages are fetched at once
	pkgs    map[string]HashedPackage // "provider version platform"
	files   map[string][]byte        // ref → archive
	fetched map[string]int
}

func newMemHashed() *memHashed {
	return &memHashed{pkgs: map[string]HashedPackage{}, files: map[string][]byte{}, fetched: map[string]int{}}
}

// add holds one package; hashes says which of its own hashes the upstream
// lists ("h1", "zh" or both).
func (m *memHashed) add(t *testing.T, provider, version, platform string, hashes ...string) []byte {
	t.Helper()
	p, v := addrs.MustParseProvider(provider), addrs.MustParseVersion(version)
	plat := mustPlatforms(platform)[0]
	body := makeZip(fmt.Sprintf("%s %s %s", p, v, plat))
	ref := key(p, v, plat)
	m.files[ref] = body
	hp := HashedPackage{Ref: ref}
	sums := archiveHashes(t, body)
	for _, h := range hashes {
		switch h {
		case "h1":
			hp.Hashes = append(hp.Hashes, sums.H1Unpacked)
		case "zh":
			hp.Hashes = append(hp.Hashes, sums.ZH)
		default:
			hp.Hashes = append(hp.Hashes, hashing.Hash(h))
		}
	}
	m.pkgs[ref] = hp
	return body
}

func archiveHashes(t *testing.T, body []byte) hashing.ArchiveSums {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.zip")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	sums, err := hashing.HashArchive(path, sha256.Sum256(body), hashing.DefaultZipLimits)
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func (m *memHashed) Location() string { return "mem-mirror" }

func (m *memHashed) Versions(_ context.Context, p addrs.Provider) (addrs.VersionList, error) {
	var out addrs.VersionList
	for k := range m.pkgs {
		if f := strings.Fields(k); f[0] == p.String() && !slices.ContainsFunc(out, func(v addrs.Version) bool { return v.String() == f[1] }) {
			out = append(out, addrs.MustParseVersion(f[1]))
		}
	}
	if len(out) == 0 {
		return nil, layout.ErrNotInMirror
	}
	return out, nil
}

func (m *memHashed) Describe(_ context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (HashedPackage, error) {
	hp, ok := m.pkgs[key(p, v, plat)]
	if !ok {
		return HashedPackage{}, ErrPlatformUnavailable
	}
	return hp, nil
}

func (m *memHashed) Platforms(_ context.Context, p addrs.Provider, v addrs.Version) ([]addrs.Platform, error) {
	var out []addrs.Platform
	for k := range m.pkgs {
		if f := strings.Fields(k); f[0] == p.String() && f[1] == v.String() {
			out = append(out, mustPlatforms(f[2])[0])
		}
	}
	return out, nil
}

func (m *memHashed) Fetch(_ context.Context, ref string, sink Sink) error {
	m.mu.Lock()
	m.fetched[ref]++
	m.mu.Unlock()
	_, err := sink.Write(m.files[ref])
	return err
}

// buildFrom builds from src into root under the trust policy.
func buildFrom(t *testing.T, root string, src Source, trust TrustPolicy, reqs ...Requirement) *Report {
	t.Helper()
	tree, err := layout.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	b := &Builder{Source: src, Checker: fakeChecker{}, Dests: []Destination{tree.Destination()}, Work: tree.Workspace, Options: Options{Trust: trust}}
	return b.Build(context.Background(), reqs)
}

const otherFoo = "example.com/acme/foo"

func TestHashesOnlyUpstreamIsMirroredWithAWarning(t *testing.T) {
	for _, listed := range [][]string{{"h1"}, {"zh"}, {"h1", "zh"}} {
		t.Run(strings.Join(listed, "+"), func(t *testing.T) {
			up := newMemHashed()
			body := up.add(t, otherFoo, "1.0.0", "linux_amd64", listed...)
			up.add(t, otherFoo, "1.0.0", "darwin_arm64", listed...)
			root := t.TempDir()
			src := &HashedSource{Name: "network_mirror https://a.example/", Upstream: up}
			r := buildFrom(t, root, src, TrustPolicy{}, requirement(t, otherFoo, "1.0.0", "linux_amd64", "darwin_arm64"))
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if got := r.Count(StatusMirrored); got != 2 {
				t.Fatalf("mirrored %d packages, want 2: %v", got, statuses(r))
			}
			if !slices.ContainsFunc(r.Warnings, func(w string) bool {
				return strings.Contains(w, "network_mirror https://a.example/ keeps no signature") && strings.Contains(w, otherFoo+" 1.0.0")
			}) {
				t.Errorf("no warning naming the upstream and the release: %q", r.Warnings)
			}
			tree, err := layout.OpenExisting(root)
			if err != nil {
				t.Fatal(err)
			}
			p, v := addrs.MustParseProvider(otherFoo), addrs.MustParseVersion("1.0.0")
			rec, err := tree.ReadRecord(context.Background(), p, v)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Provenance.HashesOnly != src.Name || rec.Signature != nil || rec.Provenance.KeyID != "" {
				t.Errorf("provenance %+v, signature %q: want hashes only from %q and no signature", rec.Provenance, rec.Signature, src.Name)
			}
			sums, err := hashing.ParseSums(rec.Sums)
			if err != nil {
				t.Fatal(err)
			}
			name := layout.ArchiveName(p, v, mustPlatforms("linux_amd64")[0])
			if sums[name] != sha256.Sum256(body) || len(sums) != 2 {
				t.Errorf("kept SHA256SUMS %q: want the digests of both archives", rec.Sums)
			}
			// What the mirror keeps passes verify and lock under the same
			// policy, and gets the same verdict.
			vr, err := (&Verifier{Mirror: tree, Checker: fakeChecker{}}).Verify(context.Background())
			if err != nil || len(vr.Problems) != 0 {
				t.Fatalf("verify: %v %v", err, vr.Problems)
			}
			entry, err := (&Locker{Mirror: tree, Checker: fakeChecker{}}).Lock(context.Background(), need(otherFoo, "1.0.0"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(entry.Hashes) != 4 {
				t.Errorf("lock hashes %v: want an h1: per platform and a zh: per archive", entry.Hashes)
			}
		})
	}
}

func TestHashesOnlyUpstreamRefusals(t *testing.T) {
	refuse := true
	cases := []struct {
		name   string
		hashes []string
		trust  TrustPolicy
		want   string
	}{
		{"require signatures", []string{"h1"}, TrustPolicy{Default: TrustRule{RefuseUnsigned: &refuse}}, "vouches for it with hashes only (no signature kept), and the trust policy refuses unsigned releases"},
		{"required signer", []string{"zh"}, TrustPolicy{Rules: []TrustRule{{Hostname: addrs.MustParseProvider(otherFoo).Hostname, Namespace: "acme", Type: "*", KeyIDs: []string{"0123456789ABCDEF"}}}}, "requires a signature by 0123456789ABCDEF"},
		{"wrong h1", []string{"h1:" + strings.Repeat("A", 43) + "="}, TrustPolicy{}, "archive unpacks to h1:"},
		{"wrong zh", []string{"zh:" + strings.Repeat("1", 64)}, TrustPolicy{}, "archive has checksum zh:"},
		{"no hashes", nil, TrustPolicy{}, "lists no h1: or zh: hash"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newMemHashed()
			up.add(t, otherFoo, "1.0.0", "linux_amd64", c.hashes...)
			root := t.TempDir()
			src := &HashedSource{Name: "filesystem_mirror /vendor", Upstream: up}
			r := buildFrom(t, root, src, c.trust, requirement(t, otherFoo, "1.0.0", "linux_amd64"))
			err := r.Err()
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), otherFoo) {
				t.Fatalf("error %v: want one naming %s and saying %q", err, otherFoo, c.want)
			}
			if _, err := os.Stat(filepath.Join(root, "example.com/acme/foo/index.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused package was published: %v", err)
			}
		})
	}
}

// A mirror built from a hashes-only upstream is itself only that to the
// next one: mirror B says where the hashes came from, and through whom.
func TestHashesOnlyThroughAChainOfMirrors(t *testing.T) {
	up := newMemHashed()
	up.add(t, otherFoo, "1.0.0", "linux_amd64", "h1")
	rootA, rootB := t.TempDir(), t.TempDir()
	src := &HashedSource{Name: "filesystem_mirror /vendor", Upstream: up}
	if err := buildFrom(t, rootA, src, TrustPolicy{}, requirement(t, otherFoo, "1.0.0", "linux_amd64")).Err(); err != nil {
		t.Fatal(err)
	}
	treeA, err := layout.OpenExisting(rootA)
	if err != nil {
		t.Fatal(err)
	}
	r := buildFrom(t, rootB, &MirrorSource{Mirror: treeA}, TrustPolicy{}, requirement(t, otherFoo, "1.0.0", "linux_amd64"))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	treeB, err := layout.OpenExisting(rootB)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := treeB.ReadRecord(context.Background(), addrs.MustParseProvider(otherFoo), addrs.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "filesystem_mirror /vendor, via " + rootA; rec.Provenance.HashesOnly != want {
		t.Errorf("B keeps hashes only from %q, want %q", rec.Provenance.HashesOnly, want)
	}
	refuse := true
	r = buildFrom(t, t.TempDir(), &MirrorSource{Mirror: treeA}, TrustPolicy{Default: TrustRule{RefuseUnsigned: &refuse}}, requirement(t, otherFoo, "1.0.0", "linux_amd64"))
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "hashes only") {
		t.Errorf("building B from A under a policy refusing unsigned releases: %v, want a refusal", err)
	}
}

// Platforms published by separate builds all stay in the kept SHA256SUMS.
func TestHashesOnlyPlatformsAddedLaterStayListed(t *testing.T) {
	up := newMemHashed()
	up.add(t, otherFoo, "1.0.0", "linux_amd64", "h1")
	up.add(t, otherFoo, "1.0.0", "darwin_arm64", "h1")
	root := t.TempDir()
	src := &HashedSource{Name: "filesystem_mirror /vendor", Upstream: up}
	for _, plat := range []string{"linux_amd64", "darwin_arm64"} {
		if err := buildFrom(t, root, src, TrustPolicy{}, requirement(t, otherFoo, "1.0.0", plat)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := layout.OpenExisting(root)
	if err != nil {
		t.Fatal(err)
	}
	vr, err := (&Verifier{Mirror: tree, Checker: fakeChecker{}}).Verify(context.Background())
	if err != nil || len(vr.Problems) != 0 || vr.Archives != 2 {
		t.Fatalf("verify: %v, problems %v, %d archives", err, vr.Problems, vr.Archives)
	}
}

// limitedSink is a Sink that takes at most limit bytes.
type limitedSink struct {
	bytes.Buffer
	limit int64
}

func (s *limitedSink) Reset() error { s.Buffer.Reset(); return nil }
func (s *limitedSink) Limit() int64 { return s.limit }

// idleReader gives (0, nil) before every read of r, as an io.Reader may.
type idleReader struct {
	r    io.Reader
	idle bool
}

func (i *idleReader) Read(p []byte) (int, error) {
	if i.idle = !i.idle; i.idle {
		return 0, nil
	}
	return i.r.Read(p)
}

// A body longer than the sink takes is refused, however its reader
// gives its bytes, and nothing past the limit reaches the sink.
func TestCopyArchiveRefusesMoreThanTheSinkTakes(t *testing.T) {
	body := bytes.Repeat([]byte("archive "), 1000)
	for _, size := range []int{len(body) - 1, len(body)} {
		for _, idle := range []bool{false, true} {
			sink := &limitedSink{limit: int64(size)}
			var r io.Reader = bytes.NewReader(body)
			if idle {
				r = &idleReader{r: r}
			}
			err := CopyArchive(sink, r)
			wantErr := size < len(body)
			if wantErr != errors.Is(err, ErrTooLarge) || (!wantErr && err != nil) {
				t.Errorf("limit %d of %d bytes (idle reads %v): error %v", size, len(body), idle, err)
			}
			if int64(sink.Len()) > sink.limit {
				t.Errorf("limit %d: the sink took %d bytes", size, sink.Len())
			}
		}
	}
}

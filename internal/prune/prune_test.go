package prune_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/internal/prune"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

var (
	foo = addrs.MustParseProvider("hashicorp/foo")
	bar = addrs.MustParseProvider("hashicorp/bar")
)

// backend is a kind of store a tree is pruned in.
type backend struct {
	name string
	// open returns a new handle on the test's tree.
	open func(t *testing.T) layout.Store
	// snapshot describes every file of the tree, the private directory
	// included where the store shows it: its content and when it was
	// written.
	snapshot func(t *testing.T) map[string]string
	// writes counts the write requests the store's handles made, where
	// that can be counted (nil otherwise).
	writes *atomic.Int64
	// age sets when a file was last written, where the test can (nil
	// otherwise).
	age func(t *testing.T, rel string, when time.Time)
	// dir is the directory of a directory store.
	dir string
}

// forEachBackend runs test against a directory store and a bucket of a
// real S3-compatible server.
func forEachBackend(t *testing.T, test func(t *testing.T, b *backend)) {
	t.Run("dir", func(t *testing.T) { test(t, dirBackend(t)) })
	t.Run("s3", func(t *testing.T) { test(t, s3Backend(t)) })
}

func dirBackend(t *testing.T) *backend {
	root := t.TempDir()
	return &backend{
		name: "dir",
		dir:  root,
		open: func(t *testing.T) layout.Store {
			s, err := layout.NewDirStore(root)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		snapshot: func(t *testing.T) map[string]string {
			t.Helper()
			out := map[string]string{}
			err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
				if err != nil || e.IsDir() {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				info, err := e.Info()
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(root, p)
				out[filepath.ToSlash(rel)] = fmt.Sprintf("%x %s", sha256.Sum256(data), info.ModTime())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return out
		},
		age: func(t *testing.T, rel string, when time.Time) {
			t.Helper()
			if err := os.Chtimes(filepath.Join(root, filepath.FromSlash(rel)), when, when); err != nil {
				t.Fatal(err)
			}
		},
	}
}

// countingTransport counts the requests that may write.
type countingTransport struct {
	base   http.RoundTripper
	writes *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.writes.Add(1)
	}
	return c.base.RoundTrip(r)
}

var (
	s3Once   sync.Mutex
	s3Bucket int
)

func s3Backend(t *testing.T) *backend {
	srv := s3test.Start(t)
	s3Once.Lock()
	s3Bucket++
	bucket := fmt.Sprintf("prune%d", s3Bucket)
	s3Once.Unlock()
	srv.CreateBucket(t, bucket)
	uri := srv.URI(bucket, "site/")
	writes := new(atomic.Int64)
	client := srv.Client(t)
	return &backend{
		name:   "s3",
		writes: writes,
		open: func(t *testing.T) layout.Store {
			t.Helper()
			s, err := s3store.New(t.Context(), uri, s3store.Config{
				Environ:    srv.Environ(),
				HTTPClient: &http.Client{Transport: countingTransport{base: http.DefaultTransport, writes: writes}},
			})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		snapshot: func(t *testing.T) map[string]string {
			t.Helper()
			out := map[string]string{}
			pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("site/")})
			for pages.HasMorePages() {
				page, err := pages.NextPage(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page.Contents {
					out[strings.TrimPrefix(aws.ToString(o.Key), "site/")] = aws.ToString(o.ETag) + " " + aws.ToTime(o.LastModified).String()
				}
			}
			return out
		},
	}
}

// published returns the files of the tree clients may read: the
// snapshot without the private directory.
func published(snap map[string]string) []string {
	var out []string
	for rel := range snap {
		if !strings.HasPrefix(rel, layout.PrivateDirName+"/") {
			out = append(out, rel)
		}
	}
	slices.Sort(out)
	return out
}

// publish publishes versions of p, each for platforms, with a kept
// SHA256SUMS, signature and provenance, as a build does.
func publish(t *testing.T, store layout.Store, p addrs.Provider, versions []string, platforms ...string) {
	t.Helper()
	ctx := context.Background()
	unlock, err := store.Lock(ctx, 10*time.Second, layout.Publish)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
	}()
	var releases []layout.Release
	for _, raw := range versions {
		v := addrs.MustParseVersion(raw)
		rel := layout.Release{Provider: p, Version: v, Record: &layout.Record{
			Provenance: layout.Provenance{Archives: map[string]layout.ProvenanceArchive{}, SigningKeys: []string{}},
			Signature:  []byte("signature of " + raw),
		}}
		var sums strings.Builder
		for _, name := range platforms {
			plat, err := addrs.ParsePlatform(name)
			if err != nil {
				t.Fatal(err)
			}
			data := []byte(fmt.Sprintf("archive of %s %s %s", p, raw, name))
			staged := filepath.Join(t.TempDir(), "staged.zip")
			if err := os.WriteFile(staged, data, 0o644); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			zh := hashing.Hash("zh:" + hex.EncodeToString(sum[:]))
			h1 := hashing.Hash("h1:" + hex.EncodeToString(sum[:8]))
			rel.Archives = append(rel.Archives, layout.Archive{Platform: plat, Staged: staged, Hashes: []hashing.Hash{h1, zh}})
			file := layout.ArchiveName(p, v, plat)
			rel.Record.Provenance.Archives[name] = layout.ProvenanceArchive{Filename: file, H1: h1, ZH: zh, Size: int64(len(data))}
			fmt.Fprintf(&sums, "%x  %s\n", sum, file)
		}
		rel.Record.Sums = []byte(sums.String())
		releases = append(releases, rel)
	}
	if _, err := layout.NewTree(store).PublishAll(ctx, layout.Repair, releases); err != nil {
		t.Fatal(err)
	}
}

// versionFiles are the files a published version has.
func versionFiles(t *testing.T, p addrs.Provider, raw string, platforms ...string) []string {
	v := addrs.MustParseVersion(raw)
	out := []string{layout.VersionPath(p, v), layout.ProvenancePath(p, v), layout.SumsPath(p, v), layout.SignaturePath(p, v)}
	for _, name := range platforms {
		plat, _ := addrs.ParsePlatform(name)
		out = append(out, layout.ArchivePath(p, v, plat))
	}
	return out
}

func require(t *testing.T, p addrs.Provider, constraints string, newest int) mirror.Requirement {
	t.Helper()
	set, err := addrs.ParseConstraints(constraints)
	if err != nil {
		t.Fatal(err)
	}
	return mirror.Requirement{Provider: p, Constraints: constraints, Allowed: set, Newest: newest}
}

func indexVersions(t *testing.T, store layout.Store, p addrs.Provider) []string {
	t.Helper()
	idx, err := layout.NewTree(store).ReadIndex(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for v := range idx.Versions {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func catalog(t *testing.T, store layout.Store) []string {
	t.Helper()
	c, _, err := layout.NewTree(store).ReadCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c.Providers
}

func names(vs []prune.Version) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.String())
	}
	return out
}

func waitingNames(ws []prune.Waiting) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// without returns files without the ones to remove.
func without(files []string, remove ...[]string) []string {
	var out []string
	for _, f := range files {
		if !slices.ContainsFunc(remove, func(r []string) bool { return slices.Contains(r, f) }) {
			out = append(out, f)
		}
	}
	return out
}

var plats = []string{"linux_amd64", "darwin_arm64"}

// A version no requirement selects is unlisted, and with a grace of 0 its
// files are deleted in the same run; everything else stays as it was.
func TestPruneUnlistsAndDeletesWithoutGrace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0", "3.0.0"}, plats...)
		publish(t, store, bar, []string{"1.0.0"}, "linux_amd64")
		before := published(b.snapshot(t))

		report, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, ">= 2.0.0", 0), require(t, bar, "", 0)},
			MaxDeletions: 10,
		})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "unlisted", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		equal(t, "deleted", names(report.Deleted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		gone := versionFiles(t, foo, "1.0.0", plats...)
		slices.Sort(gone)
		files := slices.Clone(report.Files)
		slices.Sort(files)
		equal(t, "files deleted", files, gone)
		equal(t, "index.json of foo", indexVersions(t, store, foo), []string{"2.0.0", "3.0.0"})
		equal(t, "files after", published(b.snapshot(t)), without(before, gone))
		equal(t, "catalog", catalog(t, store), []string{"registry.opentofu.org/hashicorp/bar", "registry.opentofu.org/hashicorp/foo"})
		if len(report.Waiting)+len(report.Kept)+len(report.LeftAlone) != 0 {
			t.Errorf("unexpected report: %+v", report)
		}

		// Nothing left to do: a second run changes nothing.
		snap := b.snapshot(t)
		report, err = prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, ">= 2.0.0", 0), require(t, bar, "", 0)},
			MaxDeletions: 10,
		})
		if err != nil || len(report.Unlisted)+len(report.Deleted)+len(report.Files) != 0 {
			t.Fatalf("second run: %+v, %v", report, err)
		}
		if diff := diffSnapshots(snap, b.snapshot(t)); diff != "" {
			t.Errorf("a run with nothing to do changed the store:\n%s", diff)
		}
	})
}

// newest = N keeps the newest N versions the mirror holds, whatever the
// origin has: the build's rule, applied to the mirror.
func TestPruneNewestSelectsFromTheMirror(t *testing.T) {
	b := dirBackend(t)
	store := b.open(t)
	publish(t, store, foo, []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0-beta1"}, "linux_amd64")
	report, err := prune.Run(t.Context(), b.open(t), prune.Options{
		Requirements: []mirror.Requirement{require(t, foo, "~> 1.0", 2)},
		MaxDeletions: 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "unlisted", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0", "registry.opentofu.org/hashicorp/foo 2.0.0-beta1"})
	equal(t, "index.json", indexVersions(t, store, foo), []string{"1.1.0", "1.2.0"})
}

// With a grace period, an unlisted version's files stay until index.json
// has not changed for that long.
func TestPruneGrace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0"}, plats...)
		reqs := []mirror.Requirement{require(t, foo, "2.0.0", 0)}
		start := time.Now()

		report, err := prune.Run(t.Context(), b.open(t), prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "unlisted", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		equal(t, "deleted", names(report.Deleted), nil)
		equal(t, "waiting", waitingNames(report.Waiting), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		if until := report.Waiting[0].Until; until.Before(start.Add(time.Hour)) || until.After(time.Now().Add(time.Hour)) {
			t.Errorf("waiting until %s, want an hour from now", until)
		}
		equal(t, "index.json", indexVersions(t, store, foo), []string{"2.0.0"})
		files := published(b.snapshot(t))
		for _, f := range versionFiles(t, foo, "1.0.0", plats...) {
			if !slices.Contains(files, f) {
				t.Errorf("%s was deleted during the grace period", f)
			}
		}

		// Within the grace period: nothing to do, nothing written.
		snap := b.snapshot(t)
		report, err = prune.Run(t.Context(), b.open(t), prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "deleted within the grace period", names(report.Deleted), nil)
		equal(t, "waiting", waitingNames(report.Waiting), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		if diff := diffSnapshots(snap, b.snapshot(t)); diff != "" {
			t.Errorf("a run within the grace period changed the store:\n%s", diff)
		}

		// Once index.json is older than the grace period, the files go.
		later := func() time.Time { return time.Now().Add(2 * time.Hour) }
		if b.age != nil {
			b.age(t, layout.IndexPath(foo), time.Now().Add(-2*time.Hour))
			later = nil
		}
		report, err = prune.Run(t.Context(), b.open(t), prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10, Now: later})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "unlisted after the grace period", names(report.Unlisted), nil)
		equal(t, "deleted after the grace period", names(report.Deleted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		equal(t, "waiting", waitingNames(report.Waiting), nil)
		equal(t, "files", published(b.snapshot(t)), without(files, versionFiles(t, foo, "1.0.0", plats...)))
	})
}

// A manifest whose selection of a provider matches none of the versions
// the mirror lists (versions not built yet, or a wrong constraint) would
// empty the provider: refused whole, as an input error, nothing written.
func TestPruneRefusesToEmptyANamedProvider(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "1.1.0"}, plats...)
		snap := b.snapshot(t)
		_, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, ">= 2.0.0", 0)}, Grace: 0,
		})
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "registry.opentofu.org/hashicorp/foo (>= 2.0.0), which matches none of the 2 versions the mirror lists (1.0.0, 1.1.0)") {
			t.Fatalf("err = %v, want an input error naming the provider, its selection and the versions held", err)
		}
		if diff := diffSnapshots(snap, b.snapshot(t)); diff != "" {
			t.Errorf("a refused run changed the store:\n%s", diff)
		}
	})
}

// A run that would remove more versions than allowed is refused whole.
func TestPruneCapRefusesAndWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "1.1.0", "2.0.0"}, plats...)
		publish(t, store, bar, []string{"1.0.0"}, "linux_amd64")
		snap := b.snapshot(t)
		if b.writes != nil {
			b.writes.Store(0)
		}
		// A manifest that keeps one version of foo and drops bar.
		report, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)},
			Grace:        0, MaxDeletions: 2,
		})
		var limit *prune.LimitError
		if !errors.As(err, &limit) {
			t.Fatalf("err = %v, want a *LimitError", err)
		}
		if len(limit.Versions) != 3 || limit.Max != 2 {
			t.Errorf("limit error: %d versions, max %d; want 3 and 2", len(limit.Versions), limit.Max)
		}
		for _, want := range []string{"3 versions", "--max-deletions", "nothing was written", "registry.opentofu.org/hashicorp/bar 1.0.0"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if len(report.Unlisted)+len(report.Deleted)+len(report.Files) != 0 {
			t.Errorf("a refused run reports changes: %+v", report)
		}
		if diff := diffSnapshots(snap, b.snapshot(t)); diff != "" {
			t.Errorf("a refused run changed the store:\n%s", diff)
		}
		if b.writes != nil && b.writes.Load() != 0 {
			t.Errorf("a refused run made %d write requests", b.writes.Load())
		}
		// Exactly at the cap, the run goes ahead.
		report, err = prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)}, MaxDeletions: 3,
		})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "unlisted", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/bar 1.0.0", "registry.opentofu.org/hashicorp/foo 1.0.0", "registry.opentofu.org/hashicorp/foo 1.1.0"})
		equal(t, "catalog", catalog(t, store), []string{foo.String()})
	})
}

// A dry run reports the plan and writes nothing, not even a lock.
func TestPruneDryRunWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0"}, plats...)
		snap := b.snapshot(t)
		if b.writes != nil {
			b.writes.Store(0)
		}
		report, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)}, MaxDeletions: 10, DryRun: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !report.DryRun {
			t.Error("report.DryRun is false")
		}
		equal(t, "would unlist", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		equal(t, "would delete", names(report.Deleted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		if len(report.Files) != len(versionFiles(t, foo, "1.0.0", plats...)) {
			t.Errorf("would delete files %q", report.Files)
		}
		if diff := diffSnapshots(snap, b.snapshot(t)); diff != "" {
			t.Errorf("a dry run changed the store:\n%s", diff)
		}
		if b.writes != nil && b.writes.Load() != 0 {
			t.Errorf("a dry run made %d write requests", b.writes.Load())
		}
		// A dry run over the cap says it would be refused.
		_, err = prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)}, MaxDeletions: 0, DryRun: true,
		})
		var limit *prune.LimitError
		if !errors.As(err, &limit) || !strings.Contains(err.Error(), "would be refused") {
			t.Errorf("dry run over the cap: %v", err)
		}
	})
}

// recordingStore records the writes made through a store.
type recordingStore struct {
	layout.Store
	mu  sync.Mutex
	ops []string
}

func (r *recordingStore) Put(ctx context.Context, rel string, c layout.Content) error {
	r.mu.Lock()
	r.ops = append(r.ops, "put "+rel)
	r.mu.Unlock()
	return r.Store.Put(ctx, rel, c)
}

func (r *recordingStore) Delete(ctx context.Context, rel string) error {
	r.mu.Lock()
	r.ops = append(r.ops, "delete "+rel)
	r.mu.Unlock()
	return r.Store.Delete(ctx, rel)
}

// Writes are made in reverse publish order: catalog.json, then each
// index.json, then per version <version>.json, provenance, SHA256SUMS,
// signature and archives, and last the index.json of a provider left
// with nothing.
func TestPruneReversePublishOrder(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0"}, plats...)
		publish(t, store, bar, []string{"0.1.0"}, "linux_amd64")
		rec := &recordingStore{Store: b.open(t)}
		if _, err := prune.Run(t.Context(), rec, prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)}, MaxDeletions: 10,
		}); err != nil {
			t.Fatal(err)
		}
		v1, v01 := addrs.MustParseVersion("1.0.0"), addrs.MustParseVersion("0.1.0")
		linux, _ := addrs.ParsePlatform("linux_amd64")
		darwin, _ := addrs.ParsePlatform("darwin_arm64")
		want := []string{
			"put " + layout.CatalogPath,
			"put " + layout.IndexPath(bar),
			"put " + layout.IndexPath(foo),
			"delete " + layout.VersionPath(bar, v01),
			"delete " + layout.ProvenancePath(bar, v01),
			"delete " + layout.SumsPath(bar, v01),
			"delete " + layout.SignaturePath(bar, v01),
			"delete " + layout.ArchivePath(bar, v01, linux),
			"delete " + layout.VersionPath(foo, v1),
			"delete " + layout.ProvenancePath(foo, v1),
			"delete " + layout.SumsPath(foo, v1),
			"delete " + layout.SignaturePath(foo, v1),
			"delete " + layout.ArchivePath(foo, v1, darwin),
			"delete " + layout.ArchivePath(foo, v1, linux),
			"delete " + layout.IndexPath(bar),
		}
		equal(t, "writes", rec.ops, want)
		equal(t, "catalog", catalog(t, store), []string{"registry.opentofu.org/hashicorp/foo"})
		files := published(b.snapshot(t))
		for _, f := range files {
			if strings.Contains(f, "/bar/") {
				t.Errorf("%s of the dropped provider is still there", f)
			}
		}
	})
}

// Files in a provider's directory that are not a version's own, and files
// elsewhere, are left alone and reported; so are the files of an
// unlisted version the manifest selects again.
func TestPruneLeavesOtherFilesAlone(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0"}, "linux_amd64")
		dir := layout.ProviderDir(foo)
		others := []string{
			dir + "/README.md",
			dir + "/terraform-provider-foo_1.0.0_notes.txt",
			dir + "/terraform-provider-foo_1.0.0_linux_amd64.zip.bak",
			dir + "/1.0.0.json.orig",
			dir + "/old/1.0.0.json",
			"robots.txt",
			"replica/registry.opentofu.org/v1/providers/hashicorp/foo/versions",
		}
		// A leftover of an interrupted publication of 3.0.0, which the
		// manifest selects: a build will list it.
		v3 := addrs.MustParseVersion("3.0.0")
		linux, _ := addrs.ParsePlatform("linux_amd64")
		unlock, err := store.Lock(t.Context(), time.Minute, layout.Publish)
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range append(slices.Clone(others), layout.ArchivePath(foo, v3, linux)) {
			if err := store.Put(t.Context(), rel, layout.Content{Data: []byte("operator's " + rel)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		refreshed := 0
		report, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, ">= 2.0.0", 0)}, MaxDeletions: 10,
			Refresh: func(ctx context.Context, tree *layout.Tree) error {
				// The views are refreshed from the pruned tree, while no
				// other writer can change it.
				refreshed++
				equal(t, "index.json when the views are refreshed", indexVersions(t, store, foo), []string{"2.0.0"})
				if err := tryPublish(ctx, b.open(t)); !errors.Is(err, layout.ErrLocked) {
					t.Errorf("a publisher could write the tree while its views were refreshed: %v", err)
				}
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if refreshed != 1 {
			t.Errorf("the views were refreshed %d times; want once, after the prune", refreshed)
		}
		equal(t, "deleted", names(report.Deleted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0"})
		equal(t, "kept", names(report.Kept), []string{"registry.opentofu.org/hashicorp/foo 3.0.0"})
		var left []string
		for _, l := range report.LeftAlone {
			left = append(left, l.Path)
		}
		wantLeft := slices.Clone(others[:5])
		slices.Sort(wantLeft)
		equal(t, "left alone", left, wantLeft)
		files := published(b.snapshot(t))
		for _, rel := range append(others, layout.ArchivePath(foo, v3, linux)) {
			if !slices.Contains(files, rel) {
				t.Errorf("%s was deleted", rel)
			}
		}
		for _, rel := range versionFiles(t, foo, "1.0.0", "linux_amd64") {
			if slices.Contains(files, rel) {
				t.Errorf("%s was not deleted", rel)
			}
		}
	})
}

// Leftovers of an interrupted publication that no requirement selects
// wait for the grace period like unlisted versions, counted from
// index.json's last change.
func TestPruneLeftoversWaitForGrace(t *testing.T) {
	b := dirBackend(t)
	store := b.open(t)
	publish(t, store, foo, []string{"2.0.0"}, "linux_amd64")
	unlock, err := store.Lock(t.Context(), time.Minute, layout.Publish)
	if err != nil {
		t.Fatal(err)
	}
	v := addrs.MustParseVersion("0.9.0")
	linux, _ := addrs.ParsePlatform("linux_amd64")
	if err := store.Put(t.Context(), layout.ArchivePath(foo, v, linux), layout.Content{Data: []byte("half a publication")}); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	reqs := []mirror.Requirement{require(t, foo, "2.0.0", 0)}
	b.age(t, layout.IndexPath(foo), time.Now().Add(-30*time.Minute))
	report, err := prune.Run(t.Context(), store, prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "waiting", waitingNames(report.Waiting), []string{"registry.opentofu.org/hashicorp/foo 0.9.0"})
	if d := time.Until(report.Waiting[0].Until); d < 29*time.Minute || d > 31*time.Minute {
		t.Errorf("waiting for %s more, want 30m", d)
	}
	b.age(t, layout.IndexPath(foo), time.Now().Add(-61*time.Minute))
	report, err = prune.Run(t.Context(), store, prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "deleted", names(report.Deleted), []string{"registry.opentofu.org/hashicorp/foo 0.9.0"})
	equal(t, "files deleted", report.Files, []string{layout.ArchivePath(foo, v, linux)})
}

// A prune never races a publication: while a publisher holds the store's
// lock and has written, it fails after the lock timeout, wrapping
// ErrLocked, and writes nothing of the tree.
func TestPruneWaitsForPublisher(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0"}, "linux_amd64")
		publisher := b.open(t)
		unlock, err := publisher.Lock(t.Context(), time.Minute, layout.Publish)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = unlock() }()
		if err := publisher.Put(t.Context(), "being-published.txt", layout.Content{Data: []byte("a publication in progress")}); err != nil {
			t.Fatal(err)
		}
		snap := b.snapshot(t)
		start := time.Now()
		report, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)}, MaxDeletions: 10,
			LockTimeout: 300 * time.Millisecond,
		})
		if !errors.Is(err, layout.ErrLocked) || !strings.Contains(err.Error(), "nothing was written") {
			t.Fatalf("err = %v, want one wrapping ErrLocked saying nothing was written", err)
		}
		if time.Since(start) < 300*time.Millisecond {
			t.Errorf("gave up after %s, before the lock timeout", time.Since(start))
		}
		if len(report.Unlisted)+len(report.Deleted)+len(report.Files) != 0 {
			t.Errorf("report of a locked-out run: %+v", report)
		}
		if diff := diffSnapshots(published2(snap), published2(b.snapshot(t))); diff != "" {
			t.Errorf("a locked-out prune changed the tree:\n%s", diff)
		}
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		// Once the publisher is done, the prune goes ahead.
		if _, err := prune.Run(t.Context(), b.open(t), prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "2.0.0", 0)}, MaxDeletions: 10, LockTimeout: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
		equal(t, "index.json", indexVersions(t, store, foo), []string{"2.0.0"})
	})
}

// lateStore runs before Lock what a build that finishes just before the
// prune's lock is taken does.
type lateStore struct {
	layout.Store
	before func()
}

func (l *lateStore) Lock(ctx context.Context, wait time.Duration, mode layout.LockMode) (func() error, error) {
	l.before()
	return l.Store.Lock(ctx, wait, mode)
}

// The plan made before the lock is made again under it: a version a
// build published in between is kept listed, and what it makes prunable
// is pruned, within the cap.
func TestPrunePlansAgainUnderLock(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b *backend) {
		store := b.open(t)
		publish(t, store, foo, []string{"1.0.0", "2.0.0"}, "linux_amd64")
		late := &lateStore{Store: b.open(t), before: func() {
			publish(t, b.open(t), foo, []string{"3.0.0"}, "linux_amd64")
		}}
		reqs := []mirror.Requirement{require(t, foo, "", 1)}
		report, err := prune.Run(t.Context(), late, prune.Options{Requirements: reqs, MaxDeletions: 10})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "index.json", indexVersions(t, store, foo), []string{"3.0.0"})
		equal(t, "unlisted", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/foo 1.0.0", "registry.opentofu.org/hashicorp/foo 2.0.0"})

		// The cap applies to the new plan too: before the lock, the run
		// would unlist 3.0.0; under it, 3.0.0, 4.0.0 and 5.0.0.
		publish(t, store, foo, []string{"4.0.0"}, "linux_amd64")
		var snap map[string]string
		late.before = func() {
			publish(t, b.open(t), foo, []string{"5.0.0", "6.0.0"}, "linux_amd64")
			snap = published2(b.snapshot(t))
		}
		_, err = prune.Run(t.Context(), late, prune.Options{Requirements: reqs, MaxDeletions: 1, Grace: time.Hour})
		var limit *prune.LimitError
		if !errors.As(err, &limit) || len(limit.Versions) != 3 {
			t.Fatalf("err = %v, want the cap to refuse unlisting 3.0.0, 4.0.0 and 5.0.0", err)
		}
		if diff := diffSnapshots(snap, published2(b.snapshot(t))); diff != "" {
			t.Errorf("a run refused under the lock changed the tree:\n%s", diff)
		}
	})
}

// published2 is the snapshot without the private directory.
func published2(snap map[string]string) map[string]string {
	out := map[string]string{}
	for _, rel := range published(snap) {
		out[rel] = snap[rel]
	}
	return out
}

// A provider the tree holds that no requirement names is wholly removed,
// its index.json last; one with a grace period keeps an empty index.json
// until its files are gone.
func TestPruneUnnamedProviderGoes(t *testing.T) {
	b := dirBackend(t)
	store := b.open(t)
	publish(t, store, foo, []string{"1.0.0"}, "linux_amd64")
	publish(t, store, bar, []string{"1.0.0", "1.1.0"}, "linux_amd64")
	reqs := []mirror.Requirement{require(t, foo, "", 0)}
	report, err := prune.Run(t.Context(), store, prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "unlisted", names(report.Unlisted), []string{"registry.opentofu.org/hashicorp/bar 1.0.0", "registry.opentofu.org/hashicorp/bar 1.1.0"})
	equal(t, "catalog", catalog(t, store), []string{"registry.opentofu.org/hashicorp/foo"})
	equal(t, "bar's index.json", indexVersions(t, store, bar), nil)
	if _, err := os.Stat(filepath.Join(b.dir, filepath.FromSlash(layout.IndexPath(bar)))); err != nil {
		t.Errorf("bar's index.json went before its files: %v", err)
	}
	// The next prune after the grace period still finds the provider (by
	// its index.json), deletes its files, then its index.json.
	report, err = prune.Run(t.Context(), store, prune.Options{Requirements: reqs, Grace: time.Hour, MaxDeletions: 10,
		Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "deleted", names(report.Deleted), []string{"registry.opentofu.org/hashicorp/bar 1.0.0", "registry.opentofu.org/hashicorp/bar 1.1.0"})
	if last := report.Files[len(report.Files)-1]; last != layout.IndexPath(bar) {
		t.Errorf("last file deleted: %s, want bar's index.json", last)
	}
	if _, err := os.Stat(filepath.Join(b.dir, filepath.FromSlash(layout.ProviderDir(bar)))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("bar's directory is still there: %v", err)
	}
}

func diffSnapshots(before, after map[string]string) string {
	var b strings.Builder
	for rel, v := range before {
		if w, ok := after[rel]; !ok {
			fmt.Fprintf(&b, "  deleted %s\n", rel)
		} else if w != v {
			fmt.Fprintf(&b, "  changed %s\n", rel)
		}
	}
	for rel := range after {
		if _, ok := before[rel]; !ok {
			fmt.Fprintf(&b, "  created %s\n", rel)
		}
	}
	return b.String()
}

// tryPublish takes a store's publish lock without waiting and writes a
// file, as a build would; a store may defer the lock to the first write.
func tryPublish(ctx context.Context, store layout.Store) error {
	unlock, err := store.Lock(ctx, 0, layout.Publish)
	if err != nil {
		return err
	}
	err = store.Put(ctx, "probe.txt", layout.Content{Data: []byte("a build")})
	return errors.Join(err, unlock())
}

// A manifest that names, a slip away, a provider the mirror holds, while
// the prune would unlist every version of that one, is refused as the
// typo it most likely is, and nothing is written; a provider dropped from
// the manifest on purpose still goes (TestPruneUnnamedProviderGoes).
func TestPruneRefusesAMisspeltProvider(t *testing.T) {
	b := dirBackend(t)
	store := b.open(t)
	publish(t, store, foo, []string{"1.0.0"}, "linux_amd64")
	publish(t, store, bar, []string{"1.0.0", "1.1.0"}, "linux_amd64")
	before := b.snapshot(t)
	typo := addrs.MustParseProvider("hashicorp/baz") // bar, one edit away
	for _, dry := range []bool{true, false} {
		_, err := prune.Run(t.Context(), store, prune.Options{
			Requirements: []mirror.Requirement{require(t, foo, "", 0), require(t, typo, "", 0)},
			MaxDeletions: 10, DryRun: dry,
		})
		if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "did you mean registry.opentofu.org/hashicorp/bar?") {
			t.Fatalf("dry run %v: %v; want an input error asking whether bar was meant", dry, err)
		}
	}
	if diff := diffSnapshots(before, b.snapshot(t)); diff != "" {
		t.Errorf("a refused prune changed the store:\n%s", diff)
	}
	// A name far from every provider the prune would empty is only warned of.
	report, err := prune.Run(t.Context(), store, prune.Options{
		Requirements: []mirror.Requirement{require(t, foo, "", 0), require(t, addrs.MustParseProvider("acme/quux"), "", 0)},
		MaxDeletions: 10, DryRun: true,
	})
	if err != nil || len(report.Unlisted) != 2 {
		t.Fatalf("an unrelated provider missing: %+v, %v; want bar's two versions unlisted", report, err)
	}
}

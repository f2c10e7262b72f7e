package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

func openTree(t *testing.T) *Dir {
	t.Helper()
	tr, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// stage writes content to a new staging file the way the mirror does:
// CreateStaged, write, atomicfile.SyncClose.
func stage(t testing.TB, tr *Dir, name, content string) string {
	t.Helper()
	f, err := tr.CreateStaged(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SyncClose(f); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// snapshot returns every file (with its content) and directory under the
// tree's root, except tfmirror's private directory (lock and staging).
func snapshot(t *testing.T, tr *Dir) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(tr.Root(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(tr.Root(), path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == PrivateDirName:
			return filepath.SkipDir
		case d.IsDir():
			files[rel+"/"] = ""
		default:
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readTreeFile(t *testing.T, tr *Dir, rel string) string {
	t.Helper()
	data, err := os.ReadFile(tr.Path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func indexDoc(versions ...string) string {
	if len(versions) == 0 {
		return "{\n  \"versions\": {}\n}"
	}
	var lines []string
	for _, v := range versions {
		lines = append(lines, fmt.Sprintf("    %q: {}", v))
	}
	return "{\n  \"versions\": {\n" + strings.Join(lines, ",\n") + "\n  }\n}"
}

const (
	fooDir = "registry.opentofu.org/hashicorp/foo"

	h1A hashing.Hash = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	h1B hashing.Hash = "h1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB="
	zhA hashing.Hash = "zh:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	zhB hashing.Hash = "zh:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestTreeOpenClose(t *testing.T) {
	tr, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(tr.Root()) {
		t.Errorf("Root() = %q, want an absolute path", tr.Root())
	}
	if got, want := tr.Path("a/b"), filepath.Join(tr.Root(), "a", "b"); got != want {
		t.Errorf("Path(a/b) = %q, want %q", got, want)
	}
	staged := stage(t, tr, "terraform-provider-foo_1.0.0_linux_amd64.zip", "zip")
	stagingRoot := tr.StagingDir()
	if filepath.Dir(staged) != stagingRoot || !strings.HasPrefix(stagingRoot, filepath.Join(tr.Root(), PrivateDirName)+string(filepath.Separator)) {
		t.Errorf("staged file %s is not in %s", staged, stagingRoot)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stagingRoot); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staging directory still exists after Close: %v", err)
	}
	if diff := cmp.Diff([]string{PrivateDirName}, listDir(t, tr.Root())); diff != "" {
		t.Errorf("files left in an unused tree (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"lock"}, listDir(t, filepath.Join(tr.Root(), PrivateDirName))); diff != "" {
		t.Errorf("files left in the private directory of an unused tree (-want +got):\n%s", diff)
	}
}

func TestTreeLockExcludesASecondWriter(t *testing.T) {
	root := t.TempDir()
	first, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(root)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second Open: err = %v, want ErrLocked naming the holder", err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = first.Close()
		close(released)
	}()
	second, err := OpenWait(context.Background(), root, 10*time.Second)
	if err != nil {
		t.Fatalf("OpenWait did not get the lock once it was released: %v", err)
	}
	<-released
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	held, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cancel()
	if _, err := OpenWait(ctx, root, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenWait with a cancelled context: err = %v", err)
	}
}

func TestOpenRemovesLeftoversOfKilledRuns(t *testing.T) {
	root := t.TempDir()
	leftovers := []string{
		filepath.Join(root, filepath.FromSlash(StagingDirName), "terraform-provider-foo_1.0.0_linux_amd64.zip-123"),
		filepath.Join(root, fooDir, ".tmp-index.json-456"),
		filepath.Join(root, ".tmp-x-1"),
	}
	kept := filepath.Join(root, fooDir, "index.json")
	for _, p := range append(leftovers, kept) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("leftover %s was not removed: %v", p, err)
		}
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("a published file was removed: %v", err)
	}
}

func TestTreeOpenRelative(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	tr, err := Open("mirror")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	want, err := filepath.Abs("mirror")
	if err != nil {
		t.Fatal(err)
	}
	if tr.Root() != want {
		t.Errorf("Root() = %q, want %q", tr.Root(), want)
	}
	checkMode(t, want, atomicfile.DirMode)
}

func TestTreeOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if tr, err := Open(file); err == nil {
		tr.Close()
		t.Error("Open of a file succeeded")
	}
}

func TestTreeCreateStagedRejectsSeparators(t *testing.T) {
	tr := openTree(t)
	if f, err := tr.CreateStaged("../escape.zip"); err == nil {
		f.Close()
		t.Errorf("CreateStaged with a path separator created %s", f.Name())
	}
}

func TestTreePublish(t *testing.T) {
	setUmask(t, 0o077)
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	v := addrs.MustParseVersion("1.1.0")
	linux := addrs.MustParsePlatform("linux_amd64")
	darwin := addrs.MustParsePlatform("darwin_arm64")

	stagedLinux := stage(t, tr, "linux.zip", "linux zip")
	stagedDarwin := stage(t, tr, "darwin.zip", "darwin zip")
	err := tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
		// Hashes are published sorted and without duplicates.
		{Platform: linux, Staged: stagedLinux, Hashes: []hashing.Hash{zhA, h1B, h1A, zhA}},
		{Platform: darwin, Staged: stagedDarwin, Hashes: []hashing.Hash{h1B}},
	}})
	if err != nil {
		t.Fatal(err)
	}

	for _, staged := range []string{stagedLinux, stagedDarwin} {
		if _, err := os.Stat(staged); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("staged file %s still exists after Publish: %v", staged, err)
		}
	}
	wantVersion := `{
  "archives": {
    "darwin_arm64": {
      "hashes": [
        "` + string(h1B) + `"
      ],
      "url": "terraform-provider-foo_1.1.0_darwin_arm64.zip"
    },
    "linux_amd64": {
      "hashes": [
        "` + string(h1A) + `",
        "` + string(h1B) + `",
        "` + string(zhA) + `"
      ],
      "url": "terraform-provider-foo_1.1.0_linux_amd64.zip"
    }
  }
}`
	want := map[string]string{
		"registry.opentofu.org/":           "",
		"registry.opentofu.org/hashicorp/": "",
		fooDir + "/":                       "",
		fooDir + "/terraform-provider-foo_1.1.0_linux_amd64.zip":  "linux zip",
		fooDir + "/terraform-provider-foo_1.1.0_darwin_arm64.zip": "darwin zip",
		fooDir + "/1.1.0.json": wantVersion,
		fooDir + "/index.json": indexDoc("1.1.0"),
		"./":                   "",
		CatalogPath:            "{\n  \"providers\": [\n    \"registry.opentofu.org/hashicorp/foo\"\n  ]\n}",
	}
	if diff := cmp.Diff(want, snapshot(t, tr)); diff != "" {
		t.Errorf("tree after Publish (-want +got):\n%s", diff)
	}
	for rel := range want {
		if strings.HasSuffix(rel, "/") {
			if rel != "./" {
				checkMode(t, tr.Path(rel), atomicfile.DirMode)
			}
		} else {
			checkMode(t, tr.Path(rel), atomicfile.FileMode)
		}
	}

	idx, err := tr.ReadIndex(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Index{Versions: map[string]struct{}{"1.1.0": {}}}, idx); diff != "" {
		t.Errorf("ReadIndex (-want +got):\n%s", diff)
	}
	doc, err := tr.ReadVersion(context.Background(), p, v)
	if err != nil {
		t.Fatal(err)
	}
	wantDoc := VersionDoc{Archives: map[string]ArchiveEntry{
		"linux_amd64":  {Hashes: []hashing.Hash{h1A, h1B, zhA}, URL: "terraform-provider-foo_1.1.0_linux_amd64.zip"},
		"darwin_arm64": {Hashes: []hashing.Hash{h1B}, URL: "terraform-provider-foo_1.1.0_darwin_arm64.zip"},
	}}
	if diff := cmp.Diff(wantDoc, doc); diff != "" {
		t.Errorf("ReadVersion (-want +got):\n%s", diff)
	}
}

func TestTreeReadMissing(t *testing.T) {
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	idx, err := tr.ReadIndex(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Versions == nil || len(idx.Versions) != 0 {
		t.Errorf("ReadIndex of a missing index = %#v, want an empty, writable index", idx)
	}
	doc, err := tr.ReadVersion(context.Background(), p, addrs.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Archives == nil || len(doc.Archives) != 0 {
		t.Errorf("ReadVersion of a missing document = %#v, want an empty, writable document", doc)
	}
}

func TestTreePublishMergesVersions(t *testing.T) {
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	linux := addrs.MustParsePlatform("linux_amd64")
	for _, v := range []string{"1.9.0", "1.10.0", "1.2.0-beta1"} {
		err := tr.Publish(Release{Provider: p, Version: addrs.MustParseVersion(v), Archives: []Archive{
			{Platform: linux, Staged: stage(t, tr, v, "zip "+v), Hashes: []hashing.Hash{h1A}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(indexDoc("1.10.0", "1.2.0-beta1", "1.9.0"), readTreeFile(t, tr, fooDir+"/index.json")); diff != "" {
		t.Errorf("index.json (-want +got):\n%s", diff)
	}
	for _, v := range []string{"1.9.0", "1.10.0", "1.2.0-beta1"} {
		name := "terraform-provider-foo_" + v + "_linux_amd64.zip"
		want := "{\n  \"archives\": {\n    \"linux_amd64\": {\n      \"hashes\": [\n        \"" + string(h1A) +
			"\"\n      ],\n      \"url\": \"" + name + "\"\n    }\n  }\n}"
		if diff := cmp.Diff(want, readTreeFile(t, tr, fooDir+"/"+v+".json")); diff != "" {
			t.Errorf("%s.json (-want +got):\n%s", v, diff)
		}
		if got := readTreeFile(t, tr, fooDir+"/"+name); got != "zip "+v {
			t.Errorf("%s = %q, want %q", name, got, "zip "+v)
		}
	}
}

func TestTreePublishMergesPlatforms(t *testing.T) {
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	v := addrs.MustParseVersion("1.0")
	linux := addrs.MustParsePlatform("linux_amd64")
	darwin := addrs.MustParsePlatform("darwin_arm64")

	publish := func(plat string, content string, hashes ...hashing.Hash) {
		t.Helper()
		err := tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
			{Platform: addrs.MustParsePlatform(plat), Staged: stage(t, tr, plat, content), Hashes: hashes},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	publish("linux_amd64", "linux", h1A, zhA)
	publish("darwin_arm64", "darwin", h1B, zhB)

	doc, err := tr.ReadVersion(context.Background(), p, v)
	if err != nil {
		t.Fatal(err)
	}
	want := VersionDoc{Archives: map[string]ArchiveEntry{
		linux.String():  {Hashes: []hashing.Hash{h1A, zhA}, URL: "terraform-provider-foo_1.0.0_linux_amd64.zip"},
		darwin.String(): {Hashes: []hashing.Hash{h1B, zhB}, URL: "terraform-provider-foo_1.0.0_darwin_arm64.zip"},
	}}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("1.0.0.json after a second platform (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(indexDoc("1.0.0"), readTreeFile(t, tr, fooDir+"/index.json")); diff != "" {
		t.Errorf("index.json (-want +got):\n%s", diff)
	}
	if got := readTreeFile(t, tr, fooDir+"/terraform-provider-foo_1.0.0_linux_amd64.zip"); got != "linux" {
		t.Errorf("first archive changed to %q", got)
	}

	// Publishing a platform again replaces its archive and its entry.
	publish("linux_amd64", "linux rebuilt", h1B)
	doc, err = tr.ReadVersion(context.Background(), p, v)
	if err != nil {
		t.Fatal(err)
	}
	want.Archives[linux.String()] = ArchiveEntry{Hashes: []hashing.Hash{h1B}, URL: "terraform-provider-foo_1.0.0_linux_amd64.zip"}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("1.0.0.json after republishing linux (-want +got):\n%s", diff)
	}
	if got := readTreeFile(t, tr, fooDir+"/terraform-provider-foo_1.0.0_linux_amd64.zip"); got != "linux rebuilt" {
		t.Errorf("republished archive = %q, want %q", got, "linux rebuilt")
	}
}

// An archive whose Staged is "" is already at its final path (for example
// from an earlier run); Publish only lists it.
func TestTreePublishAlreadyInPlace(t *testing.T) {
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	v := addrs.MustParseVersion("1.0.0")
	linux := addrs.MustParsePlatform("linux_amd64")
	darwin := addrs.MustParsePlatform("darwin_arm64")
	if err := atomicfile.WriteFile(tr.Path(ArchivePath(p, v, linux)), []byte("in place")); err != nil {
		t.Fatal(err)
	}
	err := tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
		{Platform: linux, Hashes: []hashing.Hash{zhA, h1A}},
		{Platform: darwin, Staged: stage(t, tr, "darwin", "darwin"), Hashes: []hashing.Hash{h1B}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := readTreeFile(t, tr, fooDir+"/terraform-provider-foo_1.0.0_linux_amd64.zip"); got != "in place" {
		t.Errorf("archive already in place changed to %q", got)
	}
	doc, err := tr.ReadVersion(context.Background(), p, v)
	if err != nil {
		t.Fatal(err)
	}
	want := VersionDoc{Archives: map[string]ArchiveEntry{
		"linux_amd64":  {Hashes: []hashing.Hash{h1A, zhA}, URL: "terraform-provider-foo_1.0.0_linux_amd64.zip"},
		"darwin_arm64": {Hashes: []hashing.Hash{h1B}, URL: "terraform-provider-foo_1.0.0_darwin_arm64.zip"},
	}}
	if diff := cmp.Diff(want, doc); diff != "" {
		t.Errorf("1.0.0.json (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(indexDoc("1.0.0"), readTreeFile(t, tr, fooDir+"/index.json")); diff != "" {
		t.Errorf("index.json (-want +got):\n%s", diff)
	}
}

// A release whose staged file vanished fails before any document changes.
func TestTreePublishMissingStagedFile(t *testing.T) {
	tr := openTree(t)
	p := addrs.MustParseProvider("hashicorp/foo")
	err := tr.Publish(Release{Provider: p, Version: addrs.MustParseVersion("1.0.0"), Archives: []Archive{
		{Platform: addrs.MustParsePlatform("linux_amd64"), Staged: filepath.Join(tr.Root(), StagingDirName, "gone.zip")},
	}})
	if err == nil {
		t.Fatal("Publish of a missing staged file succeeded")
	}
	for rel := range snapshot(t, tr) {
		if strings.HasSuffix(rel, ".json") {
			t.Errorf("Publish failed but wrote %s", rel)
		}
	}
}

// Publish must not overwrite, or build on, an index.json or <version>.json
// it cannot fully understand: it returns an error and the tree is left as
// it was.
func TestTreePublishRefusesBadExisting(t *testing.T) {
	bad := []struct {
		name, content string
	}{
		{"not JSON", "{"},
		{"empty file", ""},
		{"array", "[]"},
		{"unknown field", "{\n  \"versions\": {},\n  \"archives\": {},\n  \"extra\": 1\n}"},
		{"trailing data", "{\"versions\":{},\"archives\":{}} {}"},
	}
	for _, file := range []string{"index.json", "1.0.0.json"} {
		for _, b := range bad {
			t.Run(file+"/"+b.name, func(t *testing.T) {
				tr := openTree(t)
				p := addrs.MustParseProvider("hashicorp/foo")
				v := addrs.MustParseVersion("1.0.0")
				err := tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
					{Platform: addrs.MustParsePlatform("linux_amd64"), Staged: stage(t, tr, "linux", "linux"), Hashes: []hashing.Hash{h1A}},
				}})
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(tr.Path(fooDir+"/"+file), []byte(b.content), 0o644); err != nil {
					t.Fatal(err)
				}
				before := snapshot(t, tr)

				// Publish another platform of the same version and a new
				// version: both need the bad file.
				releases := []Release{
					{Provider: p, Version: v, Archives: []Archive{
						{Platform: addrs.MustParsePlatform("darwin_arm64"), Staged: stage(t, tr, "darwin", "darwin"), Hashes: []hashing.Hash{h1B}},
					}},
					{Provider: p, Version: v, Archives: []Archive{
						{Platform: addrs.MustParsePlatform("linux_amd64"), Staged: stage(t, tr, "linux", "linux rebuilt"), Hashes: []hashing.Hash{h1B}},
					}},
				}
				if file == "index.json" {
					releases = append(releases, Release{Provider: p, Version: addrs.MustParseVersion("2.0.0"), Archives: []Archive{
						{Platform: addrs.MustParsePlatform("linux_amd64"), Staged: stage(t, tr, "linux2", "linux 2"), Hashes: []hashing.Hash{h1B}},
					}})
				}
				for _, r := range releases {
					err := tr.Publish(r)
					if err == nil {
						t.Fatalf("Publish of %s %v with a bad %s succeeded", r.Version, r.Archives[0].Platform, file)
					}
					if !strings.Contains(err.Error(), file) {
						t.Errorf("Publish error %q does not name %s", err, file)
					}
					if diff := cmp.Diff(before, snapshot(t, tr)); diff != "" {
						t.Errorf("failed Publish of %s %v changed the tree (-before +after):\n%s", r.Version, r.Archives[0].Platform, diff)
					}
				}
			})
		}
	}
}

// Many goroutines publishing versions of the same provider (and of another
// provider) through one Tree must not lose any version from index.json.
func TestTreePublishConcurrent(t *testing.T) {
	tr := openTree(t)
	providers := []string{"hashicorp/foo", "example.com/ns/bar"}
	linux := addrs.MustParsePlatform("linux_amd64")
	const n = 24

	var wg sync.WaitGroup
	errs := make(chan error, n*len(providers))
	for _, ps := range providers {
		p := addrs.MustParseProvider(ps)
		for i := range n {
			v := addrs.MustParseVersion(fmt.Sprintf("1.%d.0", i))
			staged := stage(t, tr, fmt.Sprintf("%s-%d", p.Type, i), v.String())
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
					{Platform: linux, Staged: staged, Hashes: []hashing.Hash{h1A}},
				}})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	for _, ps := range providers {
		p := addrs.MustParseProvider(ps)
		idx, err := tr.ReadIndex(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		want := Index{Versions: map[string]struct{}{}}
		for i := range n {
			want.Versions[fmt.Sprintf("1.%d.0", i)] = struct{}{}
		}
		if diff := cmp.Diff(want, idx); diff != "" {
			t.Errorf("%s index.json after concurrent publishes (-want +got):\n%s", ps, diff)
		}
		for i := range n {
			v := addrs.MustParseVersion(fmt.Sprintf("1.%d.0", i))
			doc, err := tr.ReadVersion(context.Background(), p, v)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := doc.Archives["linux_amd64"]; !ok || len(doc.Archives) != 1 {
				t.Errorf("%s %s.json = %v, want one linux_amd64 archive", ps, v, doc)
			}
			if got := readTreeFile(t, tr, ArchivePath(p, v, linux)); got != v.String() {
				t.Errorf("%s archive = %q, want %q", ArchivePath(p, v, linux), got, v.String())
			}
		}
		// No temporary files are left next to the published ones.
		for _, name := range listDir(t, tr.Path(ProviderDir(p))) {
			if strings.HasPrefix(name, ".") {
				t.Errorf("leftover temporary file %s in %s", name, ProviderDir(p))
			}
		}
	}
}

func TestProvenanceSameSigner(t *testing.T) {
	signed := Provenance{KeyID: "34365D9472D7468F", SigningKeys: []string{"first form"}}
	for _, tt := range []struct {
		name string
		a, b Provenance
		want bool
	}{
		{"same key, same form", signed, signed, true},
		{"same key re-issued, another form", signed, Provenance{KeyID: signed.KeyID, SigningKeys: []string{"re-issued form"}}, true},
		{"same key, listed with another", signed, Provenance{KeyID: signed.KeyID, SigningKeys: []string{"other key", "first form"}}, true},
		{"another key", signed, Provenance{KeyID: "72D7468F34365D94", SigningKeys: []string{"first form"}}, false},
		{"signed and unsigned", signed, Provenance{SigningKeys: []string{}}, false},
		{"unsigned alike", Provenance{}, Provenance{SigningKeys: []string{}}, true},
		{"unsigned, other keys", Provenance{SigningKeys: []string{"a"}}, Provenance{SigningKeys: []string{"b"}}, false},
		{"hashes only from another upstream", Provenance{HashesOnly: "a"}, Provenance{HashesOnly: "b"}, false},
		{"signed and hashes only", signed, Provenance{KeyID: signed.KeyID, HashesOnly: "a"}, false},
	} {
		if got := tt.a.SameSigner(tt.b); got != tt.want {
			t.Errorf("%s: SameSigner = %t, want %t", tt.name, got, tt.want)
		}
		if got := tt.b.SameSigner(tt.a); got != tt.want {
			t.Errorf("%s, the other way: SameSigner = %t, want %t", tt.name, got, tt.want)
		}
	}
}

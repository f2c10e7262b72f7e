package bundle

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"

	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/layout"
)

// signer is a throwaway release signing key.
type signer = pgptest.Key

func newSigner(t *testing.T) signer { return pgptest.New(t, "release") }

// publishRelease publishes registry.opentofu.org/hashicorp/TYP VER for
// the platforms into the mirror at dir, the way a build does: archives
// staged and published with their SBOMs, a signed SHA256SUMS and
// provenance.
func publishRelease(t *testing.T, dir string, s signer, typ, ver string, plats ...string) {
	t.Helper()
	tree, err := layout.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	p, err := addrs.ParseProvider("hashicorp/" + typ)
	if err != nil {
		t.Fatal(err)
	}
	v, err := addrs.ParseVersion(ver)
	if err != nil {
		t.Fatal(err)
	}
	rel := layout.Release{Provider: p, Version: v}
	prov := layout.Provenance{Archives: map[string]layout.ProvenanceArchive{}, KeyID: s.ID, SigningKeys: []string{s.Armored}}
	var sums bytes.Buffer
	for _, raw := range plats {
		plat, err := addrs.ParsePlatform(raw)
		if err != nil {
			t.Fatal(err)
		}
		data := testZip(t, fmt.Sprintf("terraform-provider-%s_v%s", typ, ver), typ+" "+ver+" "+raw)
		f, err := tree.CreateStaged("archive")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.SyncClose(f); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		hs, err := hashing.HashArchive(f.Name(), sum, hashing.DefaultZipLimits)
		if err != nil {
			t.Fatal(err)
		}
		name := layout.ArchiveName(p, v, plat)
		fmt.Fprintf(&sums, "%x  %s\n", sum, name)
		doc, err := sbom.Encode(sbom.Package{Provider: p.String(), Version: ver, Platform: raw, Filename: name, ZH: string(hs.ZH), H1: string(hs.H1Unpacked)})
		if err != nil {
			t.Fatal(err)
		}
		rel.Archives = append(rel.Archives, layout.Archive{Platform: plat, Staged: f.Name(), Hashes: hs.All(), SBOM: doc})
		prov.Archives[raw] = layout.ProvenanceArchive{Filename: name, H1: hs.H1Unpacked, ZH: hs.ZH, Size: int64(len(data))}
	}
	rel.Record = &layout.Record{Provenance: prov, Sums: sums.Bytes(), Signature: s.Sign(t, sums.Bytes())}
	if err := tree.Publish(rel); err != nil {
		t.Fatal(err)
	}
}

func testZip(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// files returns every file under dir (slash paths) with its content, or
// nil if dir does not exist.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func published(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := files(t, dir)
	for k := range out {
		if strings.HasPrefix(k, ".tfmirror/") {
			delete(out, k)
		}
	}
	return out
}

func sameFiles(t *testing.T, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: missing or different", k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected", k)
		}
	}
}

func create(t *testing.T, site, out string) *CreateReport {
	t.Helper()
	return createWith(t, CreateOptions{Mirror: siteTree(t, site), Out: out})
}

// siteTree opens a mirror directory (the network tree behind a
// filesystem mirror) as Create reads it.
func siteTree(t *testing.T, site string) *layout.Tree {
	t.Helper()
	tree, err := layout.OpenExisting(layout.NetworkTreeOf(site))
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// dirTarget is a directory holding a network mirror, as Import writes it.
func dirTarget(t *testing.T, dir string) Target {
	t.Helper()
	store, err := layout.NewDirStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Target{Tree: layout.NewTree(store), Store: store, Dir: dir}
}

func createWith(t *testing.T, opts CreateOptions) *CreateReport {
	t.Helper()
	r, err := Create(context.Background(), opts)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return r
}

// twoReleaseSite is a mirror directory holding foo 1.0.0 (two platforms)
// and 1.1.0 (one), and a robots.txt that is not part of the mirror.
func twoReleaseSite(t *testing.T) string {
	t.Helper()
	site := t.TempDir()
	s := newSigner(t)
	publishRelease(t, site, s, "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	publishRelease(t, site, s, "foo", "1.1.0", "linux_amd64")
	if err := os.WriteFile(filepath.Join(site, "robots.txt"), []byte("User-agent: *\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return site
}

func TestCreateIsDeterministicAndImportRestoresTheTree(t *testing.T) {
	site := twoReleaseSite(t)
	work := t.TempDir()
	r := create(t, site, filepath.Join(work, "a.tgz"))
	if r.Providers != 1 || r.Versions != 2 || r.Archives != 3 || len(r.Skipped) != 1 || r.Skipped[0] != "robots.txt" {
		t.Errorf("report %+v", r)
	}
	create(t, site, filepath.Join(work, "b.tgz"))
	a, _ := os.ReadFile(filepath.Join(work, "a.tgz"))
	b, _ := os.ReadFile(filepath.Join(work, "b.tgz"))
	if !bytes.Equal(a, b) {
		t.Fatal("two bundles of one tree differ")
	}
	for _, e := range targz.Read(t, filepath.Join(work, "a.tgz")) {
		if !e.Header.ModTime.Equal(time.Unix(0, 0)) || e.Header.Uid != 0 || e.Header.Gid != 0 || e.Header.Uname != "" {
			t.Errorf("%s: header %+v is not normalized", e.Header.Name, e.Header)
		}
		if want := int64(0o644); e.Header.Typeflag == tar.TypeDir && e.Header.Mode != 0o755 || e.Header.Typeflag == tar.TypeReg && e.Header.Mode != want {
			t.Errorf("%s: mode %o", e.Header.Name, e.Header.Mode)
		}
	}

	dest := filepath.Join(t.TempDir(), "dest")
	refreshed := 0
	ir, err := Import(context.Background(), ImportOptions{Bundle: filepath.Join(work, "a.tgz"), Out: dest, Into: dirTarget(t, dest),
		Refresh: func(ctx context.Context, tree *layout.Tree) error {
			refreshed++
			if _, err := tree.ReadIndex(ctx, addrs.MustParseProvider("hashicorp/foo")); err != nil {
				t.Errorf("the views were refreshed before the mirror was published: %v", err)
			}
			return nil
		}})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if ir.Providers != 1 || ir.Versions != 2 || ir.Archives != 3 || ir.Written != r.Files-4 || ir.Unchanged != 0 {
		t.Errorf("import report %+v (bundle had %d files, 4 of them CLI snippets)", ir, r.Files)
	}
	want := published(t, site)
	delete(want, "robots.txt")
	got := published(t, dest)
	if refreshed != 1 {
		t.Errorf("the destination's views were refreshed %d times; want once, after the publication", refreshed)
	}
	sameFiles(t, want, got)
	if _, ok := got["registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_darwin_arm64.cdx.json"]; !ok {
		t.Error("the import did not bring the SBOMs")
	}
	if left, _ := filepath.Glob(filepath.Join(dest, ".tfmirror", "import-*")); len(left) > 0 {
		t.Errorf("staging left: %v", left)
	}
}

func TestCreateFromFilesystemMirrorUsesItsStore(t *testing.T) {
	site := t.TempDir()
	publishRelease(t, layout.StorePath(site), newSigner(t), "foo", "1.0.0", "linux_amd64")
	r := create(t, site, filepath.Join(t.TempDir(), "b.tgz"))
	if r.Archives != 1 {
		t.Errorf("report %+v", r)
	}
}

func TestCreateRefusesEmptyDirectory(t *testing.T) {
	site := t.TempDir()
	_, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: filepath.Join(t.TempDir(), "b.tgz")})
	if !errors.Is(err, ErrEmptyMirror) {
		t.Fatalf("err = %v", err)
	}
	if got := files(t, site); len(got) != 0 {
		t.Errorf("Create wrote into a directory that is no mirror: %v", got)
	}
}

func TestImportMergesAndRefusesConflicts(t *testing.T) {
	s := newSigner(t)
	site := t.TempDir()
	publishRelease(t, site, s, "foo", "1.0.0", "linux_amd64")
	bundleFile := filepath.Join(t.TempDir(), "b.tgz")
	create(t, site, bundleFile)

	// Same release made with another key and another SHA256SUMS: the kept
	// origin files differ, so the bundle must not replace them.
	dest := t.TempDir()
	publishRelease(t, dest, newSigner(t), "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	before := files(t, dest)
	_, err := Import(context.Background(), ImportOptions{Bundle: bundleFile, Out: dest, Into: dirTarget(t, dest)})
	var refusedErr *RefusedError
	if !errors.As(err, &refusedErr) {
		t.Fatalf("err = %v, want a RefusedError", err)
	}
	var paths []string
	for _, p := range refusedErr.Problems {
		paths = append(paths, p.Path)
	}
	joined := strings.Join(paths, " ")
	if !strings.Contains(joined, "_SHA256SUMS") || !strings.Contains(joined, "_provenance.json") {
		t.Errorf("problems %v", refusedErr.Problems)
	}
	after := files(t, dest)
	delete(before, ".tfmirror/lock")
	delete(after, ".tfmirror/lock")
	sameFiles(t, before, after)
}

// TestImportRemovesStaleStaging: an import stages in a workspace of its
// own; what a killed import or build left (a run whose lock nobody
// holds, however young) is removed, a live workspace's staging is not,
// and older versions' import-* directories go once a day old.
func TestImportRemovesStaleStaging(t *testing.T) {
	site := t.TempDir()
	publishRelease(t, site, newSigner(t), "foo", "1.0.0", "linux_amd64")
	bundleFile := filepath.Join(t.TempDir(), "b.tgz")
	create(t, site, bundleFile)
	dest := t.TempDir()
	old := filepath.Join(dest, ".tfmirror", "import-old")
	young := filepath.Join(dest, ".tfmirror", "import-young")
	dead := filepath.Join(dest, ".tfmirror", "run-dead")
	for _, d := range []string{old, young, filepath.Join(dead, "staging")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dead+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := layout.OpenWorkspace(filepath.Join(dest, ".tfmirror"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	liveFile, err := live.CreateStaged("live.zip")
	if err != nil {
		t.Fatal(err)
	}
	_ = liveFile.Close()
	past := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(context.Background(), ImportOptions{Bundle: bundleFile, Out: dest, Into: dirTarget(t, dest)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale staging kept: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a possibly live import's staging was removed: %v", err)
	}
	for _, p := range []string{dead, dead + ".lock"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a dead run's %s was kept: %v", p, err)
		}
	}
	if _, err := os.Stat(liveFile.Name()); err != nil {
		t.Errorf("a live workspace's staged file was removed: %v", err)
	}
}

// TestImportRefusesMalformedBundles covers what the CLI tests do not:
// each bundle is refused and the destination is left as it was.
func TestImportRefusesMalformedBundles(t *testing.T) {
	site := t.TempDir()
	publishRelease(t, site, newSigner(t), "foo", "1.0.0", "linux_amd64")
	good := filepath.Join(t.TempDir(), "b.tgz")
	create(t, site, good)
	entries := targz.Read(t, good)
	archive := -1
	for i, e := range entries {
		if strings.HasSuffix(e.Header.Name, ".zip") {
			archive = i
		}
	}

	// relisted rewrites the manifest to match the entries, so only the
	// checks after the manifest's can catch the change.
	relisted := func(es []tarEntry) []tarEntry { return relist(t, es) }
	clone := func() []tarEntry {
		out := make([]tarEntry, len(entries))
		for i, e := range entries {
			out[i] = tarEntry{Header: e.Header, Data: bytes.Clone(e.Data)}
		}
		return out
	}
	cases := []struct {
		name   string
		bundle func() []byte
		limits Limits
		want   string
	}{
		{"manifest not first", func() []byte {
			es := clone()
			es[0], es[1] = es[1], es[0]
			return targz.Pack(t, es, nil)
		}, Limits{}, "the first entry must be"},
		{"duplicate entry", func() []byte {
			es := clone()
			return targz.Pack(t, append(es, es[archive]), nil)
		}, Limits{}, "appears twice"},
		{"second manifest", func() []byte {
			es := clone()
			return targz.Pack(t, append(es, es[0]), nil)
		}, Limits{}, "appears again"},
		{"stray directory", func() []byte {
			return targz.Pack(t, append(clone(), tarEntry{Header: tar.Header{Typeflag: tar.TypeDir, Name: "mirror/extra/", Mode: 0o755}}), nil)
		}, Limits{}, "holds no file listed"},
		{"device", func() []byte {
			return targz.Pack(t, append(clone(), tarEntry{Header: tar.Header{Typeflag: tar.TypeChar, Name: "mirror/dev", Devmajor: 1, Devminor: 3}}), nil)
		}, Limits{}, "device"},
		{"backslash", func() []byte {
			return targz.Pack(t, append(clone(), targz.Regular(`mirror\..\..\evil`, "x")), nil)
		}, Limits{}, "backslashes"},
		{"listed but not part of the mirror", func() []byte {
			return targz.Pack(t, relisted(append(clone(), targz.Regular("mirror/registry.opentofu.org/hashicorp/foo/extra.html", "<script>"))), nil)
		}, Limits{}, "not part of the mirror"},
		{"listed in the private directory", func() []byte {
			return targz.Pack(t, relisted(append(clone(), targz.Regular("mirror/.tfmirror/lock", "x"))), nil)
		}, Limits{}, "not part of the mirror"},
		{"damaged archive with a matching manifest", func() []byte {
			es := clone()
			es[archive].Data[len(es[archive].Data)/2] ^= 1
			return targz.Pack(t, relisted(es), nil)
		}, Limits{}, "mirror/registry.opentofu.org/hashicorp/foo/"},
		{"size differs from the manifest", func() []byte {
			es := clone()
			es[archive].Data = append(es[archive].Data, 0)
			return targz.Pack(t, es, nil)
		}, Limits{}, "the manifest says"},
		{"data after the tar", func() []byte {
			return targz.Pack(t, clone(), []byte("trailing"))
		}, Limits{}, "bad.tgz: data after the end of the tar"},
		{"truncated", func() []byte {
			data := targz.Pack(t, clone(), nil)
			return data[:len(data)*2/3]
		}, Limits{}, "bad.tgz: the file ends early"},
		{"bytes after the gzip stream", func() []byte {
			return append(targz.Pack(t, clone(), nil), "garbage\n"...)
		}, Limits{}, "bad.tgz: the file ends early or has bytes after its end"},
		{"not gzip", func() []byte { return []byte("hello") }, Limits{}, "bad.tgz: not a gzip"},
		{"too many entries", func() []byte { return targz.Pack(t, clone(), nil) }, Limits{MaxEntries: 3, MaxBytes: 1 << 30}, "limit"},
		{"too many bytes", func() []byte { return targz.Pack(t, clone(), nil) }, Limits{MaxEntries: 1000, MaxBytes: 100}, "limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "bad.tgz")
			if err := os.WriteFile(file, tc.bundle(), 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "dest")
			_, err := Import(context.Background(), ImportOptions{Bundle: file, Out: dest, Into: dirTarget(t, dest), Limits: tc.limits})
			var refusedErr *RefusedError
			if !errors.As(err, &refusedErr) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a refusal mentioning %q", err, tc.want)
			}
			if _, err := os.Stat(dest); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("destination created: %v", err)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, name := range []string{"mirror/a", "cli-config/tofu.tfrc", "mirror/registry.opentofu.org/hashicorp/aws/5.0.0.json", "lock-files/x y/.terraform.lock.hcl"} {
		if err := checkName(name); err != nil {
			t.Errorf("checkName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "/etc/passwd", "../x", "mirror/../x", "mirror/..", "a//b", "./a", "a/./b", "a/", `a\b`, "a\x00b", "a\nb", "C:/x", "\xff"} {
		if err := checkName(name); err == nil {
			t.Errorf("checkName(%q) accepted it", name)
		}
	}
}

// TestManifestByteFlips: no single changed byte of a manifest goes
// unnoticed: it either fails to decode or lists other files (which then
// fail to match the bundle's entries).
func TestManifestByteFlips(t *testing.T) {
	m := Manifest{Format: FormatVersion, CreatedBy: createdBy, Files: []File{
		{Path: "cli-config/a.tfrc", SHA256: strings.Repeat("0a", 32), Size: 10},
		{Path: "mirror/catalog.json", SHA256: strings.Repeat("b1", 32), Size: 1234},
	}}
	data, err := encodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeManifest(data, DefaultLimits); err != nil {
		t.Fatalf("the original does not decode: %v", err)
	}
	for i := range data {
		for _, bit := range []byte{1, 2, 0x20} {
			flipped := bytes.Clone(data)
			flipped[i] ^= bit
			got, err := decodeManifest(flipped, DefaultLimits)
			if err == nil && fmt.Sprint(got.Files) == fmt.Sprint(m.Files) {
				t.Errorf("byte %d ^ %#x (%q) went unnoticed", i, bit, flipped[i])
			}
		}
	}
}

type tarEntry = targz.Entry

func sortFiles(list []File) {
	slices.SortFunc(list, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
}

// A mirror whose SBOM is not its package's is not bundled, and one whose
// provenance names an SBOM it lacks neither.
func TestCreateRefusesAMirrorWithoutItsSBOMs(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(path string) error
		want   string
	}{
		{"another package's", func(path string) error {
			other := filepath.Join(filepath.Dir(path), "terraform-provider-foo_1.0.0_linux_amd64.cdx.json")
			data, err := os.ReadFile(other)
			if err != nil {
				return err
			}
			return os.WriteFile(path, data, 0o644)
		}, "describes"},
		{"not CycloneDX", func(path string) error { return os.WriteFile(path, []byte("{}"), 0o644) }, "SBOM"},
		{"missing", os.Remove, "cannot be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			site := twoReleaseSite(t)
			path := filepath.Join(site, "registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_darwin_arm64.cdx.json")
			if err := c.change(path); err != nil {
				t.Fatal(err)
			}
			_, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: filepath.Join(t.TempDir(), "b.tgz")})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Create: %v; want a refusal naming %q", err, c.want)
			}
		})
	}
}

// Package storetest is the conformance suite of the destination seam: one
// set of checks that every layout.Reader (a directory, a published URL, a
// bucket) and every layout.Store must pass, run by each implementation's
// own tests the way restic runs one suite against all of its backends.
//
// Fixture publishes a small but complete mirror into a directory and says
// what a reader of it must see; TestReader checks a Reader over that
// directory, raw and through layout.Tree; TestStore checks the write
// guarantees the layout.Store doc states.
//
// Only tests import it.
package storetest

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/layout"
)

// Expect is what a reader of a Fixture must see.
type Expect struct {
	// Providers are sorted the way layout.Tree.Providers sorts them.
	Providers []Provider
	// Files is every file of the tree, sorted by path: what
	// layout.Tree.Files lists and what a listing store holds outside
	// layout.PrivateDirName.
	Files []File
}

// Provider is one provider of a fixture.
type Provider struct {
	Addr addrs.Provider
	// Releases are sorted by ascending version.
	Releases []Release
}

// Release is one published version of a provider.
type Release struct {
	Provider addrs.Provider
	Version  addrs.Version
	// Archives are sorted by platform.
	Archives []Archive
	// Record is what layout.Tree.ReadRecord returns: Signature is nil for
	// an unsigned release.
	Record layout.Record
}

// Signed reports whether the release keeps a signature of its SHA256SUMS.
func (r Release) Signed() bool { return r.Record.Signature != nil }

// Archive is one platform's package of a release.
type Archive struct {
	Platform addrs.Platform
	Path     string // relative to the tree's root
	Size     int64
	SHA256   [sha256.Size]byte
	// Hashes are what <version>.json lists for it, sorted.
	Hashes []hashing.Hash
	Data   []byte
	// SBOM is the package's SBOM beside it (layout.SBOMPath); nil for
	// one published without (the unsigned release).
	SBOM []byte
}

// File is one file of a fixture with its exact bytes.
type File struct {
	Path string
	Kind layout.FileKind
	Data []byte
}

// Releases returns every release of the fixture, provider by provider.
func (e Expect) Releases() []Release {
	var out []Release
	for _, p := range e.Providers {
		out = append(out, p.Releases...)
	}
	return out
}

// Archives returns every archive of the fixture.
func (e Expect) Archives() []Archive {
	var out []Archive
	for _, r := range e.Releases() {
		out = append(out, r.Archives...)
	}
	return out
}

// Paths returns the paths of Files.
func (e Expect) Paths() []string {
	out := make([]string, 0, len(e.Files))
	for _, f := range e.Files {
		out = append(out, f.Path)
	}
	return out
}

// fixtureRelease describes one release Fixture publishes.
type fixtureRelease struct {
	provider  string
	version   string
	platforms []string // sorted
	signed    bool
}

// fixtureReleases are published in this order: two versions of a provider
// of the default registry (one signed, one not), and a signed release of
// a provider whose host is only valid as punycode on disk and in URLs.
var fixtureReleases = []fixtureRelease{
	{"registry.opentofu.org/hashicorp/alpha", "1.0.0", []string{"darwin_arm64", "linux_amd64"}, true},
	{"registry.opentofu.org/hashicorp/alpha", "1.1.0", []string{"darwin_arm64", "linux_amd64"}, false},
	{"bücher.example/buchhandlung/beta", "0.2.0", []string{"linux_amd64", "windows_amd64"}, true},
}

// fixtureKeyID and fixtureKey stand for the key that signed a release.
// Nothing here checks signatures: a store keeps the bytes it is given.
const (
	fixtureKeyID = "0123456789ABCDEF"
	fixtureKey   = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nstoretest fixture key\n-----END PGP PUBLIC KEY BLOCK-----\n"
)

// zipTime makes the fixture's archives the same bytes on every run.
var zipTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// Fixture publishes a small but complete mirror into dir, which must be
// empty or absent, through layout.Open and Tree.Publish, as a build does,
// and returns what a reader of it must see. The tree holds two providers
// (one on a Unicode host, kept under its punycode name), two versions of
// one of them, two platforms per release, tiny real zip archives, a
// signed release (SHA256SUMS, its signature, signing keys and key id,
// an SBOM per package) and an unsigned one (no signature file, published
// without SBOMs).
func Fixture(t testing.TB, dir string) Expect {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("fixture: %v", err)
	}
	if len(entries) > 0 {
		t.Fatalf("fixture: %s is not empty", dir)
	}
	d, err := layout.Open(dir)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	var (
		providers []Provider
		files     = map[string]File{}
	)
	for _, fr := range fixtureReleases {
		r := publishRelease(t, d, fr, files)
		if n := len(providers); n > 0 && providers[n-1].Addr.Equals(r.Provider) {
			providers[n-1].Releases = append(providers[n-1].Releases, r)
		} else {
			providers = append(providers, Provider{Addr: r.Provider, Releases: []Release{r}})
		}
	}
	if err := d.Close(); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	slices.SortFunc(providers, func(a, b Provider) int { return strings.Compare(a.Addr.String(), b.Addr.String()) })

	// The documents are whatever the publication wrote: read them back.
	docs := map[string]layout.FileKind{layout.CatalogPath: layout.KindCatalog}
	for _, p := range providers {
		docs[layout.IndexPath(p.Addr)] = layout.KindIndex
		for _, r := range p.Releases {
			docs[layout.VersionPath(p.Addr, r.Version)] = layout.KindVersion
			docs[layout.ProvenancePath(p.Addr, r.Version)] = layout.KindProvenance
		}
	}
	for rel, kind := range docs {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatalf("fixture: the publication did not write %s: %v", rel, err)
		}
		files[rel] = File{Path: rel, Kind: kind, Data: data}
	}
	exp := Expect{Providers: providers}
	for _, f := range files {
		exp.Files = append(exp.Files, f)
	}
	slices.SortFunc(exp.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })

	// The directory holds exactly those files, with those bytes.
	onDisk := walkFiles(t, dir)
	if !slices.Equal(onDisk, exp.Paths()) {
		t.Fatalf("fixture: %s holds\n  %s\nwant\n  %s", dir, strings.Join(onDisk, "\n  "), strings.Join(exp.Paths(), "\n  "))
	}
	for _, f := range exp.Files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil || !bytes.Equal(data, f.Data) {
			t.Fatalf("fixture: %s does not hold what was published (err %v)", f.Path, err)
		}
	}
	return exp
}

// publishRelease stages and publishes one release, adding its files but
// the documents to files.
func publishRelease(t testing.TB, d *layout.Dir, fr fixtureRelease, files map[string]File) Release {
	t.Helper()
	p, err := addrs.ParseProvider(fr.provider)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	v, err := addrs.ParseVersion(fr.version)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	r := Release{Provider: p, Version: v}
	rec := layout.Record{Provenance: layout.Provenance{Archives: map[string]layout.ProvenanceArchive{}}}
	var (
		staged []layout.Archive
		sums   bytes.Buffer
	)
	for _, name := range fr.platforms {
		plat, err := addrs.ParsePlatform(name)
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		data := zipBytes(t, fmt.Sprintf("terraform-provider-%s_v%s", p.Type, v),
			fmt.Sprintf("#!/bin/sh\necho %s %s %s\n", p, v, plat))
		sum := sha256.Sum256(data)
		f, err := d.CreateStaged(layout.ArchiveName(p, v, plat))
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		_, err = f.Write(data)
		if cerr := atomicfile.SyncClose(f); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("fixture: stage %s: %v", f.Name(), err)
		}
		hs, err := hashing.HashArchive(f.Name(), sum, hashing.DefaultZipLimits)
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		a := Archive{
			Platform: plat,
			Path:     layout.ArchivePath(p, v, plat),
			Size:     int64(len(data)),
			SHA256:   sum,
			Hashes:   hs.All(),
			Data:     data,
		}
		entry := layout.ProvenanceArchive{Filename: layout.ArchiveName(p, v, plat), H1: hs.H1Unpacked, ZH: hs.ZH, Size: a.Size}
		if fr.signed {
			a.SBOM = fmt.Appendf(nil, "{\"storetest\": \"the SBOM of %s %s %s\"}\n", p, v, plat)
			rel := layout.SBOMPath(p, v, plat)
			files[rel] = File{Path: rel, Kind: layout.KindFile, Data: a.SBOM}
		}
		r.Archives = append(r.Archives, a)
		staged = append(staged, layout.Archive{Platform: plat, Staged: f.Name(), Hashes: a.Hashes, SBOM: a.SBOM})
		rec.Provenance.Archives[plat.String()] = entry
		fmt.Fprintf(&sums, "%x  %s\n", sum, layout.ArchiveName(p, v, plat))
		files[a.Path] = File{Path: a.Path, Kind: layout.KindFile, Data: data}
	}
	rec.Sums = sums.Bytes()
	files[layout.SumsPath(p, v)] = File{Path: layout.SumsPath(p, v), Kind: layout.KindFile, Data: rec.Sums}
	if fr.signed {
		rec.Provenance.KeyID = fixtureKeyID
		rec.Provenance.SigningKeys = []string{fixtureKey}
		// Not text: the bytes must come back exactly, whatever they are.
		rec.Signature = append([]byte("\x89\x02\x33\x04\x00\x01\x08\x00\x1d\xff\xfe storetest signature of "), rec.Sums...)
		files[layout.SignaturePath(p, v)] = File{Path: layout.SignaturePath(p, v), Kind: layout.KindFile, Data: rec.Signature}
	}
	published := rec
	if err := d.Publish(layout.Release{Provider: p, Version: v, Archives: staged, Record: &published}); err != nil {
		t.Fatalf("fixture: publish %s %s: %v", p, v, err)
	}
	if rec.Provenance.SigningKeys == nil {
		rec.Provenance.SigningKeys = []string{} // as published
	}
	for _, a := range r.Archives {
		if a.SBOM != nil { // the publication names it
			entry := rec.Provenance.Archives[a.Platform.String()]
			entry.SBOM = layout.SBOMName(p, v, a.Platform)
			rec.Provenance.Archives[a.Platform.String()] = entry
		}
	}
	r.Record = rec
	return r
}

// zipBytes returns a zip holding one executable file.
func zipBytes(t testing.TB, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: zipTime}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.WriteString(w, content)
	}
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("fixture: zip %s: %v", name, err)
	}
	return buf.Bytes()
}

// walkFiles lists the files under dir, slash-separated and sorted,
// without layout.PrivateDirName.
func walkFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case e.IsDir() && rel == layout.PrivateDirName:
			return filepath.SkipDir
		case !e.IsDir():
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	slices.Sort(out)
	return out
}

// TestReader is the conformance suite of a layout.Reader. It publishes a
// Fixture into a fresh directory, calls open for a Reader over it (a
// DirStore of it, a server serving it, a bucket it was uploaded to) and
// checks what the Reader returns, raw and through layout.Tree.
func TestReader(t *testing.T, open func(t *testing.T, dir string) layout.Reader) {
	dir := t.TempDir()
	exp := Fixture(t, dir)
	r := open(t, dir)
	tree := layout.NewTree(r)
	first := exp.Providers[0].Releases[0]
	archive := first.Archives[0]

	t.Run("Location", func(t *testing.T) {
		if r.Location() == "" {
			t.Error("Location is empty")
		}
	})

	t.Run("Catalog", func(t *testing.T) {
		c, ok, err := tree.ReadCatalog(t.Context())
		if err != nil || !ok {
			t.Fatalf("ReadCatalog: ok %v, err %v", ok, err)
		}
		var want []string
		for _, p := range exp.Providers {
			want = append(want, p.Addr.String())
		}
		slices.Sort(want)
		if !slices.Equal(c.Providers, want) {
			t.Errorf("catalog lists %q, want %q", c.Providers, want)
		}
	})

	t.Run("Providers", func(t *testing.T) {
		got, err := tree.Providers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var want []addrs.Provider
		for _, p := range exp.Providers {
			want = append(want, p.Addr)
		}
		if !slices.EqualFunc(got, want, addrs.Provider.Equals) {
			t.Errorf("Providers = %v, want %v", got, want)
		}
	})

	t.Run("Versions", func(t *testing.T) {
		for _, p := range exp.Providers {
			got, err := tree.Versions(t.Context(), p.Addr)
			if err != nil {
				t.Errorf("%s: %v", p.Addr, err)
				continue
			}
			var gotS, wantS []string
			for _, v := range got {
				gotS = append(gotS, v.String())
			}
			for _, r := range p.Releases {
				wantS = append(wantS, r.Version.String())
			}
			if !slices.Equal(gotS, wantS) {
				t.Errorf("%s: Versions = %q, want %q", p.Addr, gotS, wantS)
			}
		}
	})

	t.Run("ReadIndex", func(t *testing.T) {
		for _, p := range exp.Providers {
			idx, err := tree.ReadIndex(t.Context(), p.Addr)
			if err != nil {
				t.Errorf("%s: %v", p.Addr, err)
				continue
			}
			var want []string
			for _, r := range p.Releases {
				want = append(want, r.Version.String())
			}
			if got := sortedKeys(idx.Versions); !slices.Equal(got, want) {
				t.Errorf("%s: index lists %q, want %q", p.Addr, got, want)
			}
		}
	})

	t.Run("ReadVersion", func(t *testing.T) {
		for _, rel := range exp.Releases() {
			doc, err := tree.ReadVersion(t.Context(), rel.Provider, rel.Version)
			if err != nil {
				t.Errorf("%s %s: %v", rel.Provider, rel.Version, err)
				continue
			}
			var want []string
			for _, a := range rel.Archives {
				want = append(want, a.Platform.String())
			}
			if got := sortedKeys(doc.Archives); !slices.Equal(got, want) {
				t.Errorf("%s %s: platforms %q, want %q", rel.Provider, rel.Version, got, want)
			}
			for _, a := range rel.Archives {
				e, ok := doc.Archives[a.Platform.String()]
				if !ok {
					continue
				}
				if p, ok := layout.ArchiveRel(layout.VersionPath(rel.Provider, rel.Version), e.URL); !ok || p != a.Path {
					t.Errorf("%s %s %s: url %q resolves to %q, want %q", rel.Provider, rel.Version, a.Platform, e.URL, p, a.Path)
				}
				if !slices.Equal(e.Hashes, a.Hashes) {
					t.Errorf("%s %s %s: hashes %q, want %q", rel.Provider, rel.Version, a.Platform, e.Hashes, a.Hashes)
				}
			}
		}
		// A version the mirror lacks reads as an empty document.
		doc, err := tree.ReadVersion(t.Context(), first.Provider, addrs.MustParseVersion("9.9.9"))
		if err != nil || len(doc.Archives) != 0 {
			t.Errorf("unknown version: %v, %v; want an empty document", doc, err)
		}
	})

	t.Run("ReadRecordSigned", func(t *testing.T) {
		checkRecords(t, tree, exp, true)
	})

	t.Run("ReadRecordUnsigned", func(t *testing.T) {
		checkRecords(t, tree, exp, false)
	})

	t.Run("ReadSBOM", func(t *testing.T) {
		for _, rel := range exp.Releases() {
			for _, a := range rel.Archives {
				got, err := tree.ReadSBOM(t.Context(), rel.Provider, rel.Version, a.Platform)
				switch {
				case a.SBOM == nil && !errors.Is(err, fs.ErrNotExist):
					t.Errorf("%s: ReadSBOM of a package published without one: %q, %v; want fs.ErrNotExist", a.Path, got, err)
				case a.SBOM != nil && (err != nil || !bytes.Equal(got, a.SBOM)):
					t.Errorf("%s: ReadSBOM = %q, %v; want %q", a.Path, got, err, a.SBOM)
				}
			}
		}
	})

	t.Run("VersionsUnknownProvider", func(t *testing.T) {
		for _, name := range []string{"registry.opentofu.org/hashicorp/absent", "bücher.example/buchhandlung/absent"} {
			p, err := addrs.ParseProvider(name)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := tree.Versions(t.Context(), p)
			if !errors.Is(err, layout.ErrNotInMirror) {
				t.Errorf("%s: Versions = %v, %v; want an error wrapping ErrNotInMirror", p, vs, err)
			}
		}
	})

	t.Run("ReadRecordUnknownVersion", func(t *testing.T) {
		rec, err := tree.ReadRecord(t.Context(), first.Provider, addrs.MustParseVersion("9.9.9"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadRecord = %+v, %v; want an error wrapping fs.ErrNotExist", rec, err)
		}
	})

	t.Run("ReadFile", func(t *testing.T) {
		for _, f := range exp.Files {
			// A file of exactly the limit is not larger than it.
			data, err := r.ReadFile(t.Context(), f.Path, int64(len(f.Data)))
			if err != nil {
				t.Errorf("%s: %v", f.Path, err)
			} else if !bytes.Equal(data, f.Data) {
				t.Errorf("%s: read %d bytes that differ from the %d published", f.Path, len(data), len(f.Data))
			}
		}
	})

	t.Run("ReadFileLimit", func(t *testing.T) {
		for _, f := range []File{fileOf(t, exp, archive.Path), fileOf(t, exp, layout.VersionPath(first.Provider, first.Version))} {
			for _, limit := range []int64{int64(len(f.Data)) - 1, 1} {
				data, err := r.ReadFile(t.Context(), f.Path, limit)
				if err == nil {
					t.Errorf("%s (%d bytes) with a limit of %d: no error, %d bytes returned", f.Path, len(f.Data), limit, len(data))
				} else if len(data) > 0 {
					t.Errorf("%s with a limit of %d: error %v, but %d bytes returned", f.Path, limit, err, len(data))
				}
				if errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s with a limit of %d: %v; a file over the limit is no missing file", f.Path, limit, err)
				}
			}
		}
	})

	t.Run("ReadFileMissing", func(t *testing.T) {
		for _, rel := range missingPaths(first) {
			data, err := r.ReadFile(t.Context(), rel, layout.MaxDocumentBytes)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %d bytes, %v; want an error wrapping fs.ErrNotExist", rel, len(data), err)
			}
		}
	})

	t.Run("Stat", func(t *testing.T) {
		var zero [sha256.Size]byte
		for _, f := range exp.Files {
			info, err := r.Stat(t.Context(), f.Path)
			if err != nil {
				t.Errorf("%s: %v", f.Path, err)
				continue
			}
			if info.Size != int64(len(f.Data)) {
				t.Errorf("%s: size %d, want %d", f.Path, info.Size, len(f.Data))
			}
			if info.SHA256 != zero && info.SHA256 != sha256.Sum256(f.Data) {
				t.Errorf("%s: Stat reports SHA-256 %x, the content's is %x", f.Path, info.SHA256, sha256.Sum256(f.Data))
			}
		}
	})

	t.Run("StatMissing", func(t *testing.T) {
		for _, rel := range missingPaths(first) {
			info, err := r.Stat(t.Context(), rel)
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %+v, %v; want an error wrapping fs.ErrNotExist", rel, info, err)
			}
		}
	})

	t.Run("Open", func(t *testing.T) {
		for _, a := range exp.Archives() {
			body, err := r.Open(t.Context(), a.Path)
			if err != nil {
				t.Errorf("%s: %v", a.Path, err)
				continue
			}
			data, err := io.ReadAll(body)
			if cerr := body.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Errorf("%s: %v", a.Path, err)
			} else if !bytes.Equal(data, a.Data) {
				t.Errorf("%s: streamed %d bytes that differ from the %d published", a.Path, len(data), len(a.Data))
			}
		}
	})

	t.Run("OpenMissing", func(t *testing.T) {
		for _, rel := range missingPaths(first) {
			body, err := r.Open(t.Context(), rel)
			if err == nil {
				_ = body.Close()
			}
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %v; want an error wrapping fs.ErrNotExist", rel, err)
			}
		}
	})

	t.Run("Digest", func(t *testing.T) {
		for _, a := range exp.Archives() {
			sum, err := tree.Digest(t.Context(), a.Path)
			if err != nil {
				t.Errorf("%s: %v", a.Path, err)
			} else if sum != a.SHA256 {
				t.Errorf("%s: digest %x, want %x", a.Path, sum, a.SHA256)
			}
		}
		if _, err := tree.Digest(t.Context(), missingPaths(first)[0]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing file: %v; want an error wrapping fs.ErrNotExist", err)
		}
	})

	t.Run("Files", func(t *testing.T) {
		files, providers, err := tree.Files(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, f := range files {
			got = append(got, fmt.Sprintf("%s (kind %d)", f.Path, f.Kind))
		}
		for _, f := range exp.Files {
			want = append(want, fmt.Sprintf("%s (kind %d)", f.Path, f.Kind))
		}
		if !slices.Equal(got, want) {
			t.Errorf("Files =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if len(providers) != len(exp.Providers) {
			t.Errorf("Files: %d providers, want %d", len(providers), len(exp.Providers))
		}
	})

	t.Run("List", func(t *testing.T) {
		s, ok := r.(layout.Store)
		if !ok {
			t.Skip("the reader cannot list its files")
		}
		got, err := s.List(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, exp.Paths()) {
			t.Errorf("List =\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(exp.Paths(), "\n  "))
		}
	})

	t.Run("ConcurrentReads", func(t *testing.T) {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for _, f := range exp.Files {
					data, err := r.ReadFile(t.Context(), f.Path, layout.MaxDocumentBytes)
					if err != nil || !bytes.Equal(data, f.Data) {
						t.Errorf("%s: %d bytes (want %d), %v", f.Path, len(data), len(f.Data), err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}

// checkRecords checks ReadRecord of the signed or the unsigned releases.
func checkRecords(t *testing.T, tree *layout.Tree, exp Expect, signed bool) {
	t.Helper()
	n := 0
	for _, rel := range exp.Releases() {
		if rel.Signed() != signed {
			continue
		}
		n++
		name := rel.Provider.String() + " " + rel.Version.String()
		got, err := tree.ReadRecord(t.Context(), rel.Provider, rel.Version)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := rel.Record
		if !bytes.Equal(got.Sums, want.Sums) {
			t.Errorf("%s: SHA256SUMS %q, want %q", name, got.Sums, want.Sums)
		}
		switch {
		case signed && got.Signature == nil:
			t.Errorf("%s: no signature, want %d bytes", name, len(want.Signature))
		case signed && !bytes.Equal(got.Signature, want.Signature):
			t.Errorf("%s: signature %q, want %q", name, got.Signature, want.Signature)
		case !signed && got.Signature != nil:
			t.Errorf("%s: unsigned release has a signature %q", name, got.Signature)
		}
		gp, wp := got.Provenance, want.Provenance
		if gp.KeyID != wp.KeyID || !slices.Equal(gp.SigningKeys, wp.SigningKeys) {
			t.Errorf("%s: key %q %q, want %q %q", name, gp.KeyID, gp.SigningKeys, wp.KeyID, wp.SigningKeys)
		}
		if len(gp.Archives) != len(wp.Archives) {
			t.Errorf("%s: provenance of %d archives, want %d", name, len(gp.Archives), len(wp.Archives))
		}
		for plat, w := range wp.Archives {
			if g := gp.Archives[plat]; g != w {
				t.Errorf("%s %s: provenance %+v, want %+v", name, plat, g, w)
			}
		}
	}
	if n == 0 {
		t.Fatalf("the fixture has no release with signed = %v", signed)
	}
}

// missingPaths are paths a fixture lacks next to a release's files.
func missingPaths(r Release) []string {
	dir := layout.ProviderDir(r.Provider)
	return []string{
		path.Join(dir, "absent.zip"),
		path.Join(dir, "9.9.9.json"),
		path.Join("absent.example", "ns", "type", "index.json"),
	}
}

func fileOf(t *testing.T, exp Expect, rel string) File {
	t.Helper()
	for _, f := range exp.Files {
		if f.Path == rel {
			return f
		}
	}
	t.Fatalf("the fixture has no %s", rel)
	return File{}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestStore is the conformance suite of a writable layout.Store: the
// guarantees its doc states. open returns a store for the test t: calls
// with the same t return new instances over the same location, empty
// before the first write (the lock checks need two instances), and calls
// with different tests return different locations.
func TestStore(t *testing.T, open func(t *testing.T) layout.Store) {
	t.Run("PutWithoutLock", func(t *testing.T) {
		s := open(t)
		err := s.Put(t.Context(), "doc.json", layout.Content{Data: []byte("{}")})
		if err == nil {
			t.Skip("the store does not refuse a Put without its lock")
		}
		if !errors.Is(err, layout.ErrReadOnly) {
			t.Errorf("Put without the lock: %v; want an error wrapping ErrReadOnly", err)
		}
		if _, err := s.Stat(t.Context(), "doc.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after a refused Put, Stat: %v; want fs.ErrNotExist", err)
		}
		if err := s.Delete(t.Context(), "doc.json"); !errors.Is(err, layout.ErrReadOnly) {
			t.Errorf("Delete without the lock: %v; want an error wrapping ErrReadOnly", err)
		}
		unlock := lock(t, s)
		put(t, s, "doc.json", []byte("{}"))
		if err := unlock(); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(t.Context(), "doc.json", layout.Content{Data: []byte("[]")}); !errors.Is(err, layout.ErrReadOnly) {
			t.Errorf("Put after unlocking: %v; want an error wrapping ErrReadOnly", err)
		}
		if err := s.Delete(t.Context(), "doc.json"); !errors.Is(err, layout.ErrReadOnly) {
			t.Errorf("Delete after unlocking: %v; want an error wrapping ErrReadOnly", err)
		}
		expectContent(t, s, "doc.json", []byte("{}"))
	})

	t.Run("PutBytes", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		data := []byte(`{"versions":{"1.0.0":{}}}`)
		put(t, s, "registry.opentofu.org/hashicorp/alpha/index.json", data)
		expectContent(t, s, "registry.opentofu.org/hashicorp/alpha/index.json", data)
		put(t, s, "empty", []byte{})
		expectContent(t, s, "empty", []byte{})
	})

	t.Run("PutFile", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		data := bytes.Repeat([]byte("archive bytes\x00\xff"), 5000)
		src := writeTemp(t, data)
		if err := s.Put(t.Context(), "host/ns/type/a.zip", layout.Content{File: src}); err != nil {
			t.Fatal(err)
		}
		expectContent(t, s, "host/ns/type/a.zip", data)
		if got, err := os.ReadFile(src); err != nil || !bytes.Equal(got, data) {
			t.Errorf("the source file was not left in place: %d bytes, %v", len(got), err)
		}
	})

	t.Run("PutMove", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		data := []byte("moved archive")
		src := writeTemp(t, data)
		if err := s.Put(t.Context(), "host/ns/type/b.zip", layout.Content{File: src, Move: true}); err != nil {
			t.Fatal(err)
		}
		expectContent(t, s, "host/ns/type/b.zip", data)
	})

	t.Run("PutReplaces", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		put(t, s, "f", []byte("first, longer content"))
		put(t, s, "f", []byte("second"))
		expectContent(t, s, "f", []byte("second"))
		src := writeTemp(t, []byte("third, from a file"))
		if err := s.Put(t.Context(), "f", layout.Content{File: src}); err != nil {
			t.Fatal(err)
		}
		expectContent(t, s, "f", []byte("third, from a file"))
		put(t, s, "f", []byte("fourth"))
		expectContent(t, s, "f", []byte("fourth"))
		if got, err := os.ReadFile(src); err != nil || string(got) != "third, from a file" {
			t.Errorf("replacing a file changed its source: %q, %v", got, err)
		}
	})

	t.Run("PutAtomic", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		const rel = "host/ns/type/index.json"
		// Different lengths and bytes, so a mix, a truncation or an empty
		// file is neither.
		a := bytes.Repeat([]byte("a"), 64<<10)
		b := bytes.Repeat([]byte("b"), 96<<10)
		srcA, srcB := writeTemp(t, a), writeTemp(t, b)
		put(t, s, rel, a)
		last := a
		done := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for reads := 0; ; reads++ {
					select {
					case <-done:
						return
					default:
					}
					data, err := s.ReadFile(t.Context(), rel, 1<<20)
					if err != nil {
						t.Errorf("read %d during Puts: %v", reads, err)
						return
					}
					if !bytes.Equal(data, a) && !bytes.Equal(data, b) {
						t.Errorf("read %d during Puts saw %d bytes that are neither content", reads, len(data))
						return
					}
				}
			})
		}
		// At most 200 Puts, and not much longer than a few seconds on a
		// slow store.
		deadline := time.Now().Add(5 * time.Second)
		for i := 0; i < 200 && (i < 8 || time.Now().Before(deadline)); i++ {
			c, content := layout.Content{Data: b}, b
			switch i % 4 {
			case 1:
				c, content = layout.Content{Data: a}, a
			case 2:
				c, content = layout.Content{File: srcB}, b
			case 3:
				c, content = layout.Content{File: srcA}, a
			}
			if err := s.Put(t.Context(), rel, c); err != nil {
				t.Errorf("Put %d: %v", i, err)
				break
			}
			last = content
		}
		close(done)
		wg.Wait()
		expectContent(t, s, rel, last)
	})

	t.Run("Delete", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		put(t, s, "d/e/f.txt", []byte("f"))
		put(t, s, "d/g.txt", []byte("g"))
		if err := s.Delete(t.Context(), "d/e/f.txt"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(t.Context(), "d/e/f.txt"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat of a deleted file: %v; want fs.ErrNotExist", err)
		}
		if _, err := s.ReadFile(t.Context(), "d/e/f.txt", 10); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile of a deleted file: %v; want fs.ErrNotExist", err)
		}
		expectContent(t, s, "d/g.txt", []byte("g"))
		expectList(t, s, "", []string{"d/g.txt"})
		for _, rel := range []string{"d/e/f.txt", "never/was/here.json"} {
			if err := s.Delete(t.Context(), rel); err != nil {
				t.Errorf("Delete of the missing %s: %v", rel, err)
			}
		}
	})

	t.Run("List", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		expectList(t, s, "", nil)
		files := []string{
			"catalog.json",
			"registry.opentofu.org/hashicorp/alpha/index.json",
			"registry.opentofu.org/hashicorp/alpha/1.0.0.json",
			"xn--bcher-kva.example/buchhandlung/beta/index.json",
			"a/b.txt",
			"a/z/y.txt",
			"ab/c.txt",
			"a.txt",
		}
		for _, f := range files {
			put(t, s, f, []byte(f))
		}
		want := slices.Sorted(slices.Values(files))
		expectList(t, s, "", want)
		expectList(t, s, "a", []string{"a/b.txt", "a/z/y.txt"})
		expectList(t, s, "registry.opentofu.org/hashicorp", []string{
			"registry.opentofu.org/hashicorp/alpha/1.0.0.json",
			"registry.opentofu.org/hashicorp/alpha/index.json",
		})
		expectList(t, s, "missing", nil)
	})

	t.Run("Lock", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		unlock1, err := s1.Lock(context.Background(), 0, layout.Exclusive)
		if err != nil {
			t.Fatal(err)
		}
		if unlock2, err := s2.Lock(context.Background(), 0, layout.Exclusive); err == nil {
			_ = unlock2()
			_ = unlock1()
			t.Fatal("a second instance took the lock while the first held it")
		} else if !errors.Is(err, layout.ErrLocked) {
			t.Errorf("second Lock: %v; want an error wrapping ErrLocked", err)
		}
		put(t, s1, "held", []byte("by the first"))
		if err := unlock1(); err != nil {
			t.Fatal(err)
		}
		unlock2, err := s2.Lock(context.Background(), 0, layout.Exclusive)
		if err != nil {
			t.Fatalf("Lock after the first unlocked: %v", err)
		}
		put(t, s2, "held", []byte("by the second"))
		expectContent(t, s1, "held", []byte("by the second"))
		if err := unlock2(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LockWaits", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		unlock1, err := s1.Lock(context.Background(), 0, layout.Exclusive)
		if err != nil {
			t.Fatal(err)
		}
		expectExclusiveAfter(t, s2, unlock1)
	})

	t.Run("LockCancelled", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		lockMode(t, s1, layout.Exclusive)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		type result struct {
			unlock func() error
			err    error
		}
		got := make(chan result, 1)
		go func() {
			unlock, err := s2.Lock(ctx, time.Hour, layout.Exclusive)
			got <- result{unlock, err}
		}()
		select {
		case r := <-got:
			if r.err == nil {
				_ = r.unlock()
				t.Fatal("a second instance took the lock while the first held it")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Lock still waits 30s after its context ended")
		}
	})

	testLockModes(t, open)
	testConditional(t, open)
	testModTime(t, open)

	t.Run("Publish", func(t *testing.T) {
		exp := Fixture(t, t.TempDir())
		s := open(t)
		lock(t, s)
		tree := layout.NewTree(s)
		releases := fixturePublication(t, exp)
		if _, err := tree.PublishAll(t.Context(), layout.Refuse, releases); err != nil {
			t.Fatal(err)
		}
		// The same tree as the fixture's directory, byte for byte.
		expectList(t, s, "", exp.Paths())
		for _, f := range exp.Files {
			expectContent(t, s, f.Path, f.Data)
		}
		// Publishing it again finds everything in place.
		report, err := tree.PublishAll(t.Context(), layout.Refuse, fixturePublication(t, exp))
		if err != nil {
			t.Fatal(err)
		}
		if report.Written != 0 {
			t.Errorf("publishing the same releases again wrote %d files", report.Written)
		}
	})
}

// fixturePublication returns the releases of a fixture, their archives
// staged in a temporary directory.
func fixturePublication(t *testing.T, exp Expect) []layout.Release {
	t.Helper()
	var out []layout.Release
	for _, r := range exp.Releases() {
		rec := r.Record
		rel := layout.Release{Provider: r.Provider, Version: r.Version, Record: &rec}
		for _, a := range r.Archives {
			rel.Archives = append(rel.Archives, layout.Archive{Platform: a.Platform, Staged: writeTemp(t, a.Data), Hashes: a.Hashes, SBOM: a.SBOM})
		}
		out = append(out, rel)
	}
	return out
}

// lock takes s's Publish lock for the rest of the test; the returned
// function releases it earlier.
// expectExclusiveAfter checks that an exclusive Lock of s waits for a
// holder that releases its lock, with release, a moment after it starts.
func expectExclusiveAfter(t *testing.T, s layout.Store, release func() error) {
	t.Helper()
	released := make(chan error, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		released <- release()
	}()
	unlock, err := s.Lock(context.Background(), 30*time.Second, layout.Exclusive)
	if err != nil {
		t.Fatalf("exclusive Lock waiting for the holder to unlock: %v", err)
	}
	if err := <-released; err != nil {
		t.Error(err)
	}
	if err := unlock(); err != nil {
		t.Error(err)
	}
}

func lock(t *testing.T, s layout.Store) func() error {
	t.Helper()
	return lockMode(t, s, layout.Publish)
}

// lockMode takes s's lock in mode for the rest of the test; the returned
// function releases it earlier. The lock is not tied to t.Context(),
// which ends before the cleanup that releases it runs.
func lockMode(t *testing.T, s layout.Store, mode layout.LockMode) func() error {
	t.Helper()
	unlock, err := s.Lock(context.Background(), 0, mode)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() { err = unlock() })
		return err
	}
	t.Cleanup(func() {
		if err := release(); err != nil {
			t.Errorf("unlock: %v", err)
		}
	})
	return release
}

func put(t *testing.T, s layout.Store, rel string, data []byte) {
	t.Helper()
	if err := s.Put(t.Context(), rel, layout.Content{Data: data}); err != nil {
		t.Fatalf("Put %s: %v", rel, err)
	}
}

// expectContent checks rel through ReadFile, Stat and Open.
func expectContent(t *testing.T, s layout.Reader, rel string, want []byte) {
	t.Helper()
	got, err := s.ReadFile(t.Context(), rel, int64(len(want)))
	if err != nil {
		t.Errorf("ReadFile %s: %v", rel, err)
	} else if !bytes.Equal(got, want) {
		t.Errorf("ReadFile %s: %d bytes that differ from the %d put", rel, len(got), len(want))
	}
	info, err := s.Stat(t.Context(), rel)
	if err != nil {
		t.Errorf("Stat %s: %v", rel, err)
	} else if info.Size != int64(len(want)) {
		t.Errorf("Stat %s: size %d, want %d", rel, info.Size, len(want))
	}
	body, err := s.Open(t.Context(), rel)
	if err != nil {
		t.Errorf("Open %s: %v", rel, err)
		return
	}
	got, err = io.ReadAll(body)
	if cerr := body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Errorf("Open %s: %v", rel, err)
	} else if !bytes.Equal(got, want) {
		t.Errorf("Open %s: streamed %d bytes that differ from the %d put", rel, len(got), len(want))
	}
}

// expectList checks List(dir), and that it never shows the store's
// private files.
func expectList(t *testing.T, s layout.Store, dir string, want []string) {
	t.Helper()
	got, err := s.List(t.Context(), dir)
	if err != nil {
		t.Errorf("List(%q): %v", dir, err)
		return
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("List(%q) =\n  %s\nwant\n  %s", dir, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, f := range got {
		if f == layout.PrivateDirName || strings.HasPrefix(f, layout.PrivateDirName+"/") {
			t.Errorf("List(%q) shows the private %s", dir, f)
		}
	}
}

// writeTemp writes data to a new local file outside any store.
func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "content-*")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

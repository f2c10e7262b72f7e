package hashing

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// Fixtures shared by the hashing tests. dirEntries holds explicit directory
// entries ("docs/", "docs/sub/"), as some provider zips do; flatEntries has
// the same files without them.
var (
	flatEntries = []zipbuild.Entry{
		file("terraform-provider-foo_v1.0.0", "#!/bin/sh\necho provider\n"),
		file("docs/readme.md", "# foo\n"),
		file("docs/sub/notes.txt", "notes"),
		file("LICENSE", "MPL-2.0\n"),
	}
	dirEntries = []zipbuild.Entry{
		file("docs/", ""),
		file("terraform-provider-foo_v1.0.0", "#!/bin/sh\necho provider\n"),
		file("docs/readme.md", "# foo\n"),
		file("docs/sub/", ""),
		file("docs/sub/notes.txt", "notes"),
		file("LICENSE", "MPL-2.0\n"),
	}
)

// extractZip unpacks the zip at path into a fresh directory, as an
// installer would, and returns the directory.
func extractZip(t *testing.T, path string) string {
	t.Helper()
	dest := t.TempDir()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		target := filepath.Join(dest, filepath.FromSlash(f.Name))
		if strings.HasSuffix(f.Name, "/") {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dest
}

// referenceH1 computes h1 from the formula in tofu-internals.md §2,
// independently of dirhash: sorted "<hex sha256>  <name>\n" lines, then
// base64 of their SHA-256.
func referenceH1(entries []zipbuild.Entry) Hash {
	var names []string
	bodies := make(map[string]string)
	for _, e := range entries {
		names = append(names, e.Name)
		bodies[e.Name] = e.Body
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%x  %s\n", sha256.Sum256([]byte(bodies[n])), n)
	}
	return Hash("h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil)))
}

func withoutDirs(entries []zipbuild.Entry) []zipbuild.Entry {
	var out []zipbuild.Entry
	for _, e := range entries {
		if !strings.HasSuffix(e.Name, "/") {
			out = append(out, e)
		}
	}
	return out
}

const emptyH1 Hash = "h1:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="

func TestH1(t *testing.T) {
	tests := []struct {
		name    string
		entries []zipbuild.Entry
		// same reports whether H1Zip and H1Unpacked must agree.
		same bool
	}{
		{"no directory entries", flatEntries, true},
		{"explicit directory entries", dirEntries, false},
		{"single file", []zipbuild.Entry{file("a", "a")}, true},
		{"only a directory entry", []zipbuild.Entry{file("docs/", "")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := zipbuild.Write(t, tt.entries...)

			zipH1, err := H1Zip(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := dirhash.HashZip(path, dirhash.Hash1)
			if err != nil {
				t.Fatal(err)
			}
			if string(zipH1) != want {
				t.Errorf("H1Zip = %s, dirhash.HashZip = %s", zipH1, want)
			}
			if ref := referenceH1(tt.entries); zipH1 != ref {
				t.Errorf("H1Zip = %s, formula over all entries = %s", zipH1, ref)
			}

			unpacked, err := H1Unpacked(path)
			if err != nil {
				t.Fatal(err)
			}
			wantDir, err := dirhash.HashDir(extractZip(t, path), "", dirhash.Hash1)
			if err != nil {
				t.Fatal(err)
			}
			if string(unpacked) != wantDir {
				t.Errorf("H1Unpacked = %s, dirhash.HashDir of extracted zip = %s", unpacked, wantDir)
			}
			if ref := referenceH1(withoutDirs(tt.entries)); unpacked != ref {
				t.Errorf("H1Unpacked = %s, formula over files only = %s", unpacked, ref)
			}

			if got := zipH1 == unpacked; got != tt.same {
				t.Errorf("H1Zip == H1Unpacked is %v, want %v (%s vs %s)", got, tt.same, zipH1, unpacked)
			}
		})
	}
}

func TestH1EmptyZip(t *testing.T) {
	path, _ := zipbuild.Write(t)
	for name, f := range map[string]func(string) (Hash, error){"H1Zip": H1Zip, "H1Unpacked": H1Unpacked} {
		got, err := f(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != emptyH1 {
			t.Errorf("%s(empty zip) = %s, want %s", name, got, emptyH1)
		}
	}
}

// Permissions, timestamps and compression are not part of h1, and the
// order of entries in the archive does not matter.
func TestH1IgnoresEntryOrder(t *testing.T) {
	reversed := make([]zipbuild.Entry, len(flatEntries))
	for i, e := range flatEntries {
		reversed[len(flatEntries)-1-i] = e
	}
	a, _ := zipbuild.Write(t, flatEntries...)
	b, _ := zipbuild.Write(t, reversed...)
	ha, err := H1Zip(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := H1Zip(b)
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb {
		t.Errorf("H1Zip depends on entry order: %s vs %s", ha, hb)
	}
}

func TestH1Errors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.zip")
	notZip := filepath.Join(dir, "not.zip")
	if err := os.WriteFile(notZip, []byte("this is not a zip file"), 0o644); err != nil {
		t.Fatal(err)
	}
	newline, _ := zipbuild.Write(t, file("bad\nname", "x"))

	for _, path := range []string{missing, notZip, newline} {
		if h, err := H1Zip(path); err == nil {
			t.Errorf("H1Zip(%s) = %s, want error", filepath.Base(path), h)
		}
		if h, err := H1Unpacked(path); err == nil {
			t.Errorf("H1Unpacked(%s) = %s, want error", filepath.Base(path), h)
		}
		if hs, err := archiveHashes(path, [sha256.Size]byte{}); err == nil {
			t.Errorf("ArchiveHashes(%s) = %v, want error", filepath.Base(path), hs)
		}
	}
}

func TestZH(t *testing.T) {
	tests := []struct {
		data string
		want Hash
	}{
		{"", "zh:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "zh:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		if got := ZH(sha256.Sum256([]byte(tt.data))); got != tt.want {
			t.Errorf("ZH(sha256(%q)) = %s, want %s", tt.data, got, tt.want)
		}
	}
}

func TestArchiveHashes(t *testing.T) {
	tests := []struct {
		name    string
		entries []zipbuild.Entry
		want    int
	}{
		{"no directory entries", flatEntries, 2},
		{"explicit directory entries", dirEntries, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, sum := zipbuild.Write(t, tt.entries...)
			got, err := archiveHashes(path, sum)
			if err != nil {
				t.Fatal(err)
			}
			zipH1, err := H1Zip(path)
			if err != nil {
				t.Fatal(err)
			}
			unpacked, err := H1Unpacked(path)
			if err != nil {
				t.Fatal(err)
			}
			// h1: sorts before zh: byte-wise, and the two h1 hashes sort
			// by their base64 value.
			var want []Hash
			if zipH1 == unpacked {
				want = []Hash{zipH1, ZH(sum)}
			} else if zipH1 < unpacked {
				want = []Hash{zipH1, unpacked, ZH(sum)}
			} else {
				want = []Hash{unpacked, zipH1, ZH(sum)}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ArchiveHashes mismatch (-want +got):\n%s", diff)
			}
			if len(got) != tt.want {
				t.Errorf("ArchiveHashes returned %d hashes, want %d: %v", len(got), tt.want, got)
			}
			if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i] < got[j] }) {
				t.Errorf("ArchiveHashes not sorted: %v", got)
			}
			if !strings.HasPrefix(string(got[0]), SchemeH1) || !strings.HasPrefix(string(got[len(got)-1]), SchemeZH) {
				t.Errorf("ArchiveHashes = %v, want h1: hashes first and zh: last", got)
			}
		})
	}
}

func TestWriter(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
	}{
		{"nothing written", nil},
		{"one empty write", []string{""}},
		{"one chunk", []string{"hello"}},
		{"several chunks", []string{"he", "", "llo", " wor", "ld"}},
		{"large", []string{strings.Repeat("x", 1<<20), "tail"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter()
			for _, c := range tt.chunks {
				n, err := w.Write([]byte(c))
				if err != nil || n != len(c) {
					t.Fatalf("Write(%d bytes) = %d, %v", len(c), n, err)
				}
			}
			all := strings.Join(tt.chunks, "")
			if got, want := w.Sum(), sha256.Sum256([]byte(all)); got != want {
				t.Errorf("Sum = %x, want %x", got, want)
			}
			if got := w.Len(); got != int64(len(all)) {
				t.Errorf("Len = %d, want %d", got, len(all))
			}
		})
	}
}

// Sum does not reset the Writer; it can be called mid-stream.
func TestWriterSumMidStream(t *testing.T) {
	w := NewWriter()
	mustWrite(t, w, "abc")
	if got, want := w.Sum(), sha256.Sum256([]byte("abc")); got != want {
		t.Errorf("Sum after abc = %x, want %x", got, want)
	}
	mustWrite(t, w, "def")
	if got, want := w.Sum(), sha256.Sum256([]byte("abcdef")); got != want {
		t.Errorf("Sum after abcdef = %x, want %x", got, want)
	}
	if w.Len() != 6 {
		t.Errorf("Len = %d, want 6", w.Len())
	}
}

// The intended use: hash a download while it streams to disk.
func TestWriterWithMultiWriter(t *testing.T) {
	path, sum := zipbuild.Write(t, dirEntries...)
	src, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var disk bytes.Buffer
	w := NewWriter()
	n, err := io.Copy(io.MultiWriter(&disk, w), src)
	if err != nil {
		t.Fatal(err)
	}
	if w.Sum() != sum || w.Len() != n || int64(disk.Len()) != n {
		t.Errorf("Sum = %x Len = %d copied = %d, want %x and %d", w.Sum(), w.Len(), disk.Len(), sum, n)
	}
}

func mustWrite(t *testing.T, w io.Writer, s string) {
	t.Helper()
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
}

// archiveHashes is what a mirror publishes for an archive: every distinct
// hash HashArchive finds, sorted.
func archiveHashes(path string, sum [sha256.Size]byte) ([]Hash, error) {
	a, err := HashArchive(path, sum, DefaultZipLimits)
	if err != nil {
		return nil, err
	}
	return a.All(), nil
}

package hashing

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// zipOf writes a zip with the given entries (a name ending in "/" is a
// directory entry) and returns its path.
func zipOf(t testing.TB, names []string, contents []string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i, name := range names {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(name, "/") {
			if _, err := w.Write([]byte(contents[i%len(contents)])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p.zip")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkOnePass holds HashArchive's one-pass hashes to dirhash's own.
func checkOnePass(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := HashArchive(path, sha256.Sum256(data), DefaultZipLimits)
	wantZip, zerr := dirhash.HashZip(path, dirhash.Hash1)
	if (err != nil) != (zerr != nil) {
		t.Fatalf("HashArchive error %v, dirhash.HashZip error %v", err, zerr)
	}
	if err != nil {
		return
	}
	if string(got.H1) != wantZip {
		t.Errorf("H1 = %s, dirhash.HashZip = %s", got.H1, wantZip)
	}
	wantUnpacked, err := H1Unpacked(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.H1Unpacked != wantUnpacked {
		t.Errorf("H1Unpacked = %s, dirhash over the files = %s", got.H1Unpacked, wantUnpacked)
	}
}

func TestOnePassMatchesDirhash(t *testing.T) {
	tests := map[string][]string{
		"one file":            {"terraform-provider-foo_v1.0.0"},
		"directory entries":   {"docs/", "docs/README.md", "terraform-provider-foo"},
		"nested":              {"a/b/c", "a/b/", "a/", "z"},
		"duplicate names":     {"x", "y", "x"},
		"empty file":          {"empty"},
		"unsorted entries":    {"zeta", "alpha", "mid/", "mid/file"},
		"only a directory":    {"d/"},
		"names needing order": {"a-b", "a/b", "a.b", "A"},
	}
	for name, entries := range tests {
		t.Run(name, func(t *testing.T) {
			checkOnePass(t, zipOf(t, entries, []string{"one", "", "three\nlines\n"}))
		})
	}
}

func FuzzOnePassMatchesDirhash(f *testing.F) {
	f.Add("docs/\x00docs/a\x00bin", "content")
	f.Add("x\x00x", "")
	f.Fuzz(func(t *testing.T, names, content string) {
		list := strings.Split(names, "\x00")
		if len(list) > 20 {
			return
		}
		for _, n := range list {
			if n == "" || strings.ContainsAny(n, "\\\n") || checkEntryName(n) != nil {
				return
			}
		}
		checkOnePass(t, zipOf(t, list, []string{content, content + "!"}))
	})
}

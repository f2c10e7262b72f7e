package hashing

import (
	"archive/zip"
	"crypto/sha256"
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// zipOf writes a zip with the given entries (a name ending in "/" is a
// directory entry), their contents taken in turn from contents, and
// returns its path.
func zipOf(t testing.TB, names []string, contents []string) string {
	t.Helper()
	entries := make([]zipbuild.Entry, len(names))
	for i, name := range names {
		entries[i] = file(name, contents[i%len(contents)])
	}
	path, _ := zipbuild.Write(t, entries...)
	return path
}

// checkOnePass holds HashArchive's one-pass hashes to dirhash's own, and
// its refusals to the unpack rule: it accepts exactly the archives that
// dirhash can hash and CheckUnpackable accepts (so every archive it accepts
// can be laid out).
func checkOnePass(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := HashArchive(path, sha256.Sum256(data), DefaultZipLimits)
	wantZip, zerr := dirhash.HashZip(path, dirhash.Hash1)
	ruleErr := unpackRule(t, path)
	switch {
	case err == nil && ruleErr != nil:
		t.Fatalf("HashArchive accepted an archive the unpack rule refuses: %v", ruleErr)
	case err == nil && zerr != nil:
		t.Fatalf("HashArchive accepted an archive dirhash.HashZip refuses: %v", zerr)
	case err != nil && ruleErr == nil && zerr == nil:
		t.Fatalf("HashArchive refused an archive dirhash and the unpack rule accept: %v", err)
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

// unpackRule applies CheckUnpackable, the unpacked layout's rule, to the
// entries of the zip at path.
func unpackRule(t testing.TB, path string) error {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		t.Fatal(err)
	}
	defer zr.Close()
	_, err = CheckUnpackable(zr.File)
	return err
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

// FuzzOnePassMatchesDirhash builds zips of arbitrary names (a name ending
// in "/" is a directory entry): HashArchive must agree with dirhash on the
// ones it accepts, and accept only archives the unpack rule accepts.
func FuzzOnePassMatchesDirhash(f *testing.F) {
	f.Add("docs/\x00docs/a\x00bin", "content")
	f.Add("x\x00x", "")
	f.Add("a\x00a/b", "")
	f.Add("a/b\x00a", "")
	f.Add("a/\x00a", "")
	f.Add("docs/../README.md", "x")
	f.Add("a/./b\x00a//c", "x")
	f.Add("../evil\x00/abs\x00back\\slash", "x")
	f.Fuzz(func(t *testing.T, names, content string) {
		list := strings.Split(names, "\x00")
		if len(list) > 20 || len(names) > 4000 { // zip names fit in 64 KiB
			return
		}
		checkOnePass(t, zipOf(t, list, []string{content, content + "!"}))
	})
}

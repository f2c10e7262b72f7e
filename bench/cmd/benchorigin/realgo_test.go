package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// TestRealGoCorpus makes a "realgo" corpus of three executables (the first
// 4 MiB of this test binary, a real Go executable, and two cuts of them) for three platforms,
// each zip holding at least 1.5 times the test binary: every zip is valid,
// its first entry is the provider's executable, every entry unpacks to
// its file and carries the bytes archive/zip's compressor writes, and the
// corpus is the same when made again.
func TestRealGoCorpus(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	data = data[:min(len(data), 4<<20)] // enough, and quick to deflate
	src := t.TempDir()
	files := map[string][]byte{"big": data, "half": data[:len(data)/2], "third": data[:len(data)/3]}
	paths := []string{filepath.Join(src, "big"), filepath.Join(src, "half"), filepath.Join(src, "third")}
	for _, p := range paths {
		if err := os.WriteFile(p, files[filepath.Base(p)], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o, err := parseFlags([]string{"-cache", "x", "-state-dir", "y", "-shape", "realgo", "-providers", "1",
		"-platforms", "linux_amd64,darwin_arm64,windows_amd64", "-sizes",
		// At least 1.5 times the big one: two or three executables a zip.
		itoa(int64(len(data)) * 3 / 2), "-executables", paths[0] + "," + paths[1] + "," + paths[2]}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a, err := loadOrGenerate(t.TempDir(), o.spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadOrGenerate(t.TempDir(), o.spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"linux_amd64":   {"terraform-provider-p1_v1.0.0", "half"},            // big + half = 1.5 big
		"darwin_arm64":  {"terraform-provider-p1_v1.0.0", "third", "big"},    // half + third < 1.5 big
		"windows_amd64": {"terraform-provider-p1_v1.0.0.exe", "big", "half"}, // third + big < 1.5 big
	}
	for i, p := range a.Packages {
		if p.SHA256 != b.Packages[i].SHA256 {
			t.Errorf("%s differs between two generations", p.File)
		}
		path := filepath.Join(a.Dir, p.File)
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var unpacked int64
		for k, f := range zr.File {
			names = append(names, f.Name)
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(rc) // checks the CRC and the size
			_ = rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", p.File, f.Name, err)
			}
			unpacked += int64(len(got))
			name := f.Name
			if k == 0 {
				name = []string{"big", "half", "third"}[i]
			}
			if !bytes.Equal(got, files[name]) {
				t.Errorf("%s: %s is not the file %s", p.File, f.Name, name)
			}
			if f.Mode().Perm() != 0o755 || f.Modified.Year() != 2025 || f.Method != zip.Deflate {
				t.Errorf("%s: %s: mode %v, modified %v, method %d", p.File, f.Name, f.Mode(), f.Modified, f.Method)
			}
			raw, err := f.OpenRaw()
			if err != nil {
				t.Fatal(err)
			}
			comp, err := io.ReadAll(raw)
			if err != nil {
				t.Fatal(err)
			}
			var ref bytes.Buffer
			fw, _ := flate.NewWriter(&ref, 5)
			_, _ = fw.Write(got)
			_ = fw.Close()
			if !bytes.Equal(comp, ref.Bytes()) {
				t.Errorf("%s: %s: not the bytes archive/zip's compressor writes", p.File, f.Name)
			}
		}
		_ = zr.Close()
		if !slices.Equal(names, want[p.Platform]) {
			t.Errorf("%s: entries %q, want %q", p.File, names, want[p.Platform])
		}
		if unpacked != p.Unpacked {
			t.Errorf("%s: unpacks to %d bytes, corpus.json says %d", p.File, unpacked, p.Unpacked)
		}
		if _, err := dirhash.HashZip(path, dirhash.Hash1); err != nil {
			t.Errorf("%s: h1: %v", p.File, err)
		}
	}
	if _, err := os.Stat(filepath.Join(a.Dir, ".raw")); err == nil {
		t.Errorf("the raw streams were left in the corpus")
	}
	// Another executable's content is another corpus.
	if err := os.WriteFile(paths[2], data[:len(data)/4], 0o755); err != nil {
		t.Fatal(err)
	}
	o2, err := parseFlags([]string{"-cache", "x", "-state-dir", "y", "-shape", "realgo", "-providers", "1",
		"-platforms", "linux_amd64,darwin_arm64,windows_amd64", "-sizes", itoa(int64(len(data)) * 3 / 2),
		"-executables", paths[0] + "," + paths[1] + "," + paths[2]}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o2.spec.key() == o.spec.key() {
		t.Errorf("a changed executable keeps the corpus's cache key")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

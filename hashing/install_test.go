package hashing_test

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
	"github.com/tfmirror/tfmirror/layout"
)

// install unpacks the zip at path as the unpacked filesystem layout does
// and returns the package directory, or the layout's error.
func install(t testing.TB, path string) (string, error) {
	t.Helper()
	final := filepath.Join(t.TempDir(), "registry.example", "ns", "foo", "1.0.0", "linux_amd64")
	err := layout.InstallPackageDir(filepath.Join(t.TempDir(), "work"), path, final, hashing.DefaultZipLimits)
	return final, err
}

// TestH1UnpackedIsTheInstalledDirectory holds the h1: a mirror records for
// the unpacked package ("tofu init" writes it to lock files) to what the
// directory the unpacked layout extracts hashes to.
func TestH1UnpackedIsTheInstalledDirectory(t *testing.T) {
	bin := zipbuild.Entry{Name: "terraform-provider-foo_v1.0.0", Body: "#!/bin/sh\necho provider\n", Mode: 0o755}
	tests := []struct {
		name    string
		entries []zipbuild.Entry
		// flat reports whether the zip has no directory entries, so that
		// its h1 and its unpacked h1 agree.
		flat bool
	}{
		{"one file", []zipbuild.Entry{bin}, true},
		{"files in subdirectories", []zipbuild.Entry{bin, {Name: "docs/README.md", Body: "# foo\n"}, {Name: "docs/sub/notes.txt", Body: "notes"}, {Name: "LICENSE", Body: "MPL-2.0\n"}}, true},
		{"empty files", []zipbuild.Entry{bin, {Name: "empty"}, {Name: "d/empty"}}, true},
		{"explicit directory entries", []zipbuild.Entry{{Name: "docs/"}, bin, {Name: "docs/README.md", Body: "# foo\n"}, {Name: "docs/sub/"}, {Name: "docs/sub/notes.txt", Body: "notes"}}, false},
		{"directory entries after their files", []zipbuild.Entry{bin, {Name: "docs/sub/notes.txt", Body: "notes"}, {Name: "docs/sub/"}, {Name: "docs/"}}, false},
		{"empty directory entry", []zipbuild.Entry{bin, {Name: "plugins/"}}, false},
		{"only a directory entry", []zipbuild.Entry{{Name: "d/"}}, false},
		{"directory by mode, without the slash", []zipbuild.Entry{bin, {Name: "docs", Mode: fs.ModeDir | 0o755}, {Name: "docs/README.md", Body: "# foo\n"}}, false},
		{"empty archive", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, sum := zipbuild.Write(t, tt.entries...)
			sums, err := hashing.HashArchive(path, sum, hashing.DefaultZipLimits)
			if err != nil {
				t.Fatal(err)
			}
			dir, err := install(t, path)
			if err != nil {
				t.Fatalf("HashArchive accepted an archive the unpacked layout refuses: %v", err)
			}
			want, err := dirhash.HashDir(dir, "", dirhash.Hash1)
			if err != nil {
				t.Fatal(err)
			}
			if string(sums.H1Unpacked) != want {
				t.Errorf("H1Unpacked = %s, the installed directory hashes to %s", sums.H1Unpacked, want)
			}
			if (sums.H1 == sums.H1Unpacked) != tt.flat {
				t.Errorf("H1 %s, H1Unpacked %s: equal should be %v", sums.H1, sums.H1Unpacked, tt.flat)
			}
		})
	}
}

// FuzzHashArchiveInstalls builds zips of arbitrary names (separated by NUL)
// and kinds (one byte per entry: file, executable, directory by mode,
// symbolic link, named pipe), and holds HashArchive to the unpacked layout: every
// archive it accepts installs with layout.InstallPackageDir, to a directory
// that hashes to its H1Unpacked; and it refuses only what the layout refuses
// (or what dirhash cannot hash: a name with a newline).
func FuzzHashArchiveInstalls(f *testing.F) {
	f.Add("terraform-provider-foo\x00docs/\x00docs/README.md", []byte{1, 0, 0}, "x")
	f.Add("docs\x00docs/README.md", []byte{2, 0}, "")
	f.Add("docs\x00docs/README.md", []byte{2, 0}, "content in a directory")
	f.Add("a\x00b\x00a", []byte{0, 0, 0}, "x")
	f.Add("a/\x00a", []byte{0, 0}, "x")
	f.Add("a\x00a/b/c", []byte{0, 0}, "x")
	f.Add("a/b\x00a", []byte{0, 0}, "x")
	f.Add("docs/../README.md", []byte{0}, "x")
	f.Add("a/./b\x00c//d\x00./e", []byte{0, 0, 0}, "x")
	f.Add("../x\x00/abs\x00back\\slash", []byte{0, 0, 0}, "x")
	f.Add("link\x00fifo", []byte{3, 4}, "/etc/passwd")
	f.Add("new\nline", []byte{0}, "x")
	f.Fuzz(func(t *testing.T, names string, kinds []byte, content string) {
		list := strings.Split(names, "\x00")
		if len(list) > 16 {
			return
		}
		entries := make([]zipbuild.Entry, len(list))
		for i, name := range list {
			if len(name) > 200 { // under any file system's name length limit
				return
			}
			kind := byte(0)
			if i < len(kinds) {
				kind = kinds[i] % 5
			}
			e := zipbuild.Entry{Name: name, Body: content}
			switch kind {
			case 1:
				e.Mode = 0o755
			case 2:
				e.Mode = fs.ModeDir | 0o755
				if len(content)%2 == 0 { // directories with content now and then
					e.Body = ""
				}
			case 3:
				e.Mode = fs.ModeSymlink | 0o777
			case 4:
				e.Mode = fs.ModeNamedPipe | 0o644
			}
			entries[i] = e
		}
		path, sum := zipbuild.Write(t, entries...)
		sums, err := hashing.HashArchive(path, sum, hashing.DefaultZipLimits)
		dir, ierr := install(t, path)
		switch {
		case err == nil && ierr != nil:
			t.Fatalf("HashArchive accepted an archive the unpacked layout refuses: %v", ierr)
		case err != nil && ierr == nil && !strings.Contains(names, "\n"):
			t.Fatalf("HashArchive refused an archive the unpacked layout installs: %v", err)
		case err != nil:
			return
		}
		want, err := dirhash.HashDir(dir, "", dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		if string(sums.H1Unpacked) != want {
			t.Errorf("H1Unpacked = %s, the installed directory hashes to %s", sums.H1Unpacked, want)
		}
		if zh, err := dirhash.HashZip(path, dirhash.Hash1); err != nil || string(sums.H1) != zh {
			t.Errorf("H1 = %s, dirhash.HashZip = %s, %v", sums.H1, zh, err)
		}
	})
}

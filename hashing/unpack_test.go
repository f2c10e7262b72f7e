package hashing

import (
	"archive/zip"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// file is a plain file entry (or a directory entry, if name ends in "/").
var file = zipbuild.File

// TestHashArchiveRefusesWhatCannotBeUnpacked: archives that verify but
// cannot be unpacked into a directory exactly as named are refused before
// anything is hashed or published, with an error naming the entry.
func TestHashArchiveRefusesWhatCannotBeUnpacked(t *testing.T) {
	bin := file("terraform-provider-foo_v1.0.0", "#!/bin/sh\n")
	tests := []struct {
		name    string
		entries []zipbuild.Entry
		entry   string // the entry the error must name
		why     string
	}{
		{"duplicate file", []zipbuild.Entry{bin, file("README.md", "1"), file("README.md", "2")}, "README.md", "duplicate entry name"},
		{"duplicate of the binary", []zipbuild.Entry{bin, bin}, bin.Name, "duplicate entry name"},
		{"duplicate directory", []zipbuild.Entry{bin, file("docs/", ""), file("docs/", "")}, "docs/", "duplicate entry name"},
		{"directory then file", []zipbuild.Entry{bin, file("a/", ""), file("a", "x")}, "a", "duplicate entry name"},
		{"file then directory", []zipbuild.Entry{bin, file("a", "x"), file("a/", "")}, "a/", "duplicate entry name"},
		{"file then child", []zipbuild.Entry{bin, file("a", "x"), file("a/b", "y")}, "a/b", `parent "a" is a file entry`},
		{"file then grandchild", []zipbuild.Entry{bin, file("a", "x"), file("a/b/c", "y")}, "a/b/c", `parent "a" is a file entry`},
		{"child then file", []zipbuild.Entry{bin, file("a/b", "y"), file("a", "x")}, "a", "file is also the parent directory of another entry"},
		{"dot-dot inside", []zipbuild.Entry{bin, file("docs/../README.md", "x")}, "docs/../README.md", "name is not canonical"},
		{"dot component", []zipbuild.Entry{bin, file("a/./b", "x")}, "a/./b", "name is not canonical"},
		{"leading dot", []zipbuild.Entry{bin, file("./a", "x")}, "./a", "name is not canonical"},
		{"double slash", []zipbuild.Entry{bin, file("a//b", "x")}, "a//b", "name is not canonical"},
		{"dot directory", []zipbuild.Entry{bin, file("./", "")}, "./", "name is not canonical"},
		{"escape", []zipbuild.Entry{bin, file("../x", "x")}, "../x", "name leaves the package directory"},
		{"absolute", []zipbuild.Entry{bin, file("/etc/passwd", "x")}, "/etc/passwd", "name is absolute"},
		{"backslash", []zipbuild.Entry{bin, file(`docs\README.md`, "x")}, `docs\README.md`, "name contains a backslash"},
		{"NUL", []zipbuild.Entry{bin, file("a\x00b", "x")}, "a\x00b", "name contains a NUL byte"},
		{"empty name", []zipbuild.Entry{bin, file("", "x")}, "", "empty name"},
		{"symbolic link", []zipbuild.Entry{bin, {Name: "link", Body: "/etc/passwd", Mode: fs.ModeSymlink | 0o777}}, "link", "symbolic links are not allowed"},
		{"named pipe", []zipbuild.Entry{bin, {Name: "fifo", Mode: fs.ModeNamedPipe | 0o644}}, "fifo", "not a regular file or directory"},
		{"device", []zipbuild.Entry{bin, {Name: "dev", Mode: fs.ModeDevice | 0o644}}, "dev", "not a regular file or directory"},
		{"directory with content", []zipbuild.Entry{bin, {Name: "d", Body: "data", Mode: fs.ModeDir | 0o755}}, "d", "directory entry has content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, sum := zipbuild.Write(t, tt.entries...)
			sums, err := HashArchive(path, sum, DefaultZipLimits)
			if err == nil {
				t.Fatalf("HashArchive accepted the archive: %v", sums)
			}
			want := `entry "` + strings.ReplaceAll(tt.entry, "\\", `\\`) + `": ` + tt.why
			want = strings.ReplaceAll(want, "\x00", `\x00`)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
			if sums != (ArchiveSums{}) {
				t.Errorf("HashArchive returned hashes with its error: %v", sums)
			}
			var eerr *EntryError
			if !errors.As(err, &eerr) || eerr.Entry != tt.entry {
				t.Errorf("error %v is not an *EntryError for %q", err, tt.entry)
			}
		})
	}
}

// TestHashArchiveAcceptsWellFormedPackages: explicit directory entries, in
// any order, and directories given by mode alone are fine.
func TestHashArchiveAcceptsWellFormedPackages(t *testing.T) {
	bin := zipbuild.Entry{Name: "terraform-provider-foo_v1.0.0", Body: "#!/bin/sh\n", Mode: 0o755}
	tests := map[string][]zipbuild.Entry{
		"files only":                   {bin, file("docs/README.md", "x"), file("docs/sub/notes", "y"), file("LICENSE", "z")},
		"directory entries first":      {file("docs/", ""), file("docs/sub/", ""), bin, file("docs/README.md", "x"), file("docs/sub/notes", "y")},
		"directory entries last":       {bin, file("docs/sub/notes", "y"), file("docs/sub/", ""), file("docs/", "")},
		"directory by mode":            {bin, {Name: "docs", Mode: fs.ModeDir | 0o755}, file("docs/README.md", "x")},
		"empty directory":              {bin, file("empty/", "")},
		"only a directory":             {file("d/", "")},
		"similar names":                {bin, file("a-b", "1"), file("a/b", "2"), file("a.b", "3"), file("ab", "4"), file("A", "5")},
		"dots inside names":            {bin, file("..a", "1"), file("a..", "2"), file(".hidden/.x", "3"), file("a/...", "4")},
		"nothing":                      nil,
		"executable in a subdirectory": {{Name: "bin/tool", Body: "x", Mode: 0o755}, file("bin/", "")},
	}
	for name, entries := range tests {
		t.Run(name, func(t *testing.T) {
			path, sum := zipbuild.Write(t, entries...)
			if _, err := HashArchive(path, sum, DefaultZipLimits); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckUnpackable checks what the rule returns for an accepted archive:
// canonical names without the trailing slash, directories by mode.
func TestCheckUnpackable(t *testing.T) {
	path, _ := zipbuild.Write(t,
		file("docs/", ""),
		file("docs/README.md", "x"),
		zipbuild.Entry{Name: "bin", Mode: fs.ModeDir | 0o755},
		zipbuild.Entry{Name: "bin/tool", Body: "y", Mode: 0o755},
	)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	got, err := CheckUnpackable(zr.File)
	if err != nil {
		t.Fatal(err)
	}
	want := []UnpackEntry{{"docs", true}, {"docs/README.md", false}, {"bin", true}, {"bin/tool", false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckUnpackable (-want +got):\n%s", diff)
	}
	if got, err := CheckUnpackable(nil); err != nil || len(got) != 0 {
		t.Errorf("CheckUnpackable(nil) = %v, %v", got, err)
	}
}

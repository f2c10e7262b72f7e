package hashing

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modeEntry is one entry of a zip built by zipOfModes: its mode is set on
// the header (0 is a plain 0644 file, or a directory if the name ends in
// "/"), and body is written as is, even for a directory given by mode alone
// (archive/zip writes nothing to a name ending in "/").
type modeEntry struct {
	name string
	body string
	mode fs.FileMode
}

func file(name, body string) modeEntry { return modeEntry{name: name, body: body} }

// zipOfModes writes a zip of entries and returns its path and SHA-256.
func zipOfModes(t testing.TB, entries ...modeEntry) (string, [sha256.Size]byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch {
		case e.mode != 0:
			h.SetMode(e.mode)
		case strings.HasSuffix(e.name, "/"):
			h.SetMode(fs.ModeDir | 0o755)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.name, "/") {
			continue // archive/zip writes no content to a name ending in "/"
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pkg.zip")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sha256.Sum256(buf.Bytes())
}

// TestHashArchiveRefusesWhatCannotBeUnpacked: archives that verify but
// cannot be unpacked into a directory exactly as named are refused before
// anything is hashed or published, with an error naming the entry.
func TestHashArchiveRefusesWhatCannotBeUnpacked(t *testing.T) {
	bin := file("terraform-provider-foo_v1.0.0", "#!/bin/sh\n")
	tests := []struct {
		name    string
		entries []modeEntry
		entry   string // the entry the error must name
		why     string
	}{
		{"duplicate file", []modeEntry{bin, file("README.md", "1"), file("README.md", "2")}, "README.md", "duplicate entry name"},
		{"duplicate of the binary", []modeEntry{bin, bin}, bin.name, "duplicate entry name"},
		{"duplicate directory", []modeEntry{bin, file("docs/", ""), file("docs/", "")}, "docs/", "duplicate entry name"},
		{"directory then file", []modeEntry{bin, file("a/", ""), file("a", "x")}, "a", "duplicate entry name"},
		{"file then directory", []modeEntry{bin, file("a", "x"), file("a/", "")}, "a/", "duplicate entry name"},
		{"file then child", []modeEntry{bin, file("a", "x"), file("a/b", "y")}, "a/b", `parent "a" is a file entry`},
		{"file then grandchild", []modeEntry{bin, file("a", "x"), file("a/b/c", "y")}, "a/b/c", `parent "a" is a file entry`},
		{"child then file", []modeEntry{bin, file("a/b", "y"), file("a", "x")}, "a", "file is also the parent directory of another entry"},
		{"dot-dot inside", []modeEntry{bin, file("docs/../README.md", "x")}, "docs/../README.md", "name is not canonical"},
		{"dot component", []modeEntry{bin, file("a/./b", "x")}, "a/./b", "name is not canonical"},
		{"leading dot", []modeEntry{bin, file("./a", "x")}, "./a", "name is not canonical"},
		{"double slash", []modeEntry{bin, file("a//b", "x")}, "a//b", "name is not canonical"},
		{"dot directory", []modeEntry{bin, file("./", "")}, "./", "name is not canonical"},
		{"escape", []modeEntry{bin, file("../x", "x")}, "../x", "name leaves the package directory"},
		{"absolute", []modeEntry{bin, file("/etc/passwd", "x")}, "/etc/passwd", "name is absolute"},
		{"backslash", []modeEntry{bin, file(`docs\README.md`, "x")}, `docs\README.md`, "name contains a backslash"},
		{"NUL", []modeEntry{bin, file("a\x00b", "x")}, "a\x00b", "name contains a NUL byte"},
		{"empty name", []modeEntry{bin, file("", "x")}, "", "empty name"},
		{"symbolic link", []modeEntry{bin, {name: "link", body: "/etc/passwd", mode: fs.ModeSymlink | 0o777}}, "link", "symbolic links are not allowed"},
		{"named pipe", []modeEntry{bin, {name: "fifo", mode: fs.ModeNamedPipe | 0o644}}, "fifo", "not a regular file or directory"},
		{"device", []modeEntry{bin, {name: "dev", mode: fs.ModeDevice | 0o644}}, "dev", "not a regular file or directory"},
		{"directory with content", []modeEntry{bin, {name: "d", body: "data", mode: fs.ModeDir | 0o755}}, "d", "directory entry has content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, sum := zipOfModes(t, tt.entries...)
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
	bin := modeEntry{name: "terraform-provider-foo_v1.0.0", body: "#!/bin/sh\n", mode: 0o755}
	tests := map[string][]modeEntry{
		"files only":                   {bin, file("docs/README.md", "x"), file("docs/sub/notes", "y"), file("LICENSE", "z")},
		"directory entries first":      {file("docs/", ""), file("docs/sub/", ""), bin, file("docs/README.md", "x"), file("docs/sub/notes", "y")},
		"directory entries last":       {bin, file("docs/sub/notes", "y"), file("docs/sub/", ""), file("docs/", "")},
		"directory by mode":            {bin, {name: "docs", mode: fs.ModeDir | 0o755}, file("docs/README.md", "x")},
		"empty directory":              {bin, file("empty/", "")},
		"only a directory":             {file("d/", "")},
		"similar names":                {bin, file("a-b", "1"), file("a/b", "2"), file("a.b", "3"), file("ab", "4"), file("A", "5")},
		"dots inside names":            {bin, file("..a", "1"), file("a..", "2"), file(".hidden/.x", "3"), file("a/...", "4")},
		"nothing":                      nil,
		"executable in a subdirectory": {{name: "bin/tool", body: "x", mode: 0o755}, file("bin/", "")},
	}
	for name, entries := range tests {
		t.Run(name, func(t *testing.T) {
			path, sum := zipOfModes(t, entries...)
			if _, err := HashArchive(path, sum, DefaultZipLimits); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckUnpackable checks what the rule returns for an accepted archive:
// canonical names without the trailing slash, directories by mode.
func TestCheckUnpackable(t *testing.T) {
	path, _ := zipOfModes(t,
		file("docs/", ""),
		file("docs/README.md", "x"),
		modeEntry{name: "bin", mode: fs.ModeDir | 0o755},
		modeEntry{name: "bin/tool", body: "y", mode: 0o755},
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

package hashing

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// UnpackEntry is one archive entry as it unpacks into a package directory.
type UnpackEntry struct {
	Name string // canonical slash-separated path, without a trailing slash
	Dir  bool   // a directory (the entry's mode says so), not a regular file
}

// EntryError is why one archive entry cannot be unpacked.
type EntryError struct {
	Entry  string // the entry's name as the archive spells it
	Reason string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("entry %s: %s", excerpt.Quote(e.Entry), e.Reason)
}

// CheckUnpackable is the rule every provider archive must pass to be
// unpacked into an empty directory exactly as named: the one HashArchive
// applies before an archive is published and the unpacked filesystem layout
// applies before it extracts, so that a package that hashes can always be
// laid out, and the unpacked directory hashes (dirhash.HashDir) to the
// H1Unpacked HashArchive recorded.
//
// It refuses, reading only the central directory, an entry whose name is
// empty, contains a NUL or a backslash, is absolute, is not local
// (filepath.IsLocal) or is not canonical ("a/./b", "a/../b", "a//b"); a
// symbolic link or anything else neither a regular file nor a directory; a
// directory entry with content; a name that appears twice ("a" and "a/"
// count as the same); and a file that is also the parent of another entry
// ("a" and "a/b", in either order). An entry is a directory if its mode
// says so (a name ending in "/" always does).
//
// On success it returns one UnpackEntry per file, in order. A refusal is an
// *EntryError naming the first entry refused.
func CheckUnpackable(files []*zip.File) ([]UnpackEntry, error) {
	seen := make(map[string]bool)    // entry name → is a directory
	parents := make(map[string]bool) // directories implied by deeper entries
	out := make([]UnpackEntry, 0, len(files))
	for _, f := range files {
		refuse := func(format string, args ...any) error {
			return &EntryError{Entry: f.Name, Reason: fmt.Sprintf(format, args...)}
		}
		name, why := canonicalEntryName(f.Name)
		if why != "" {
			return nil, refuse("%s", why)
		}
		mode := f.Mode()
		dir := mode.IsDir()
		switch {
		case mode&fs.ModeSymlink != 0:
			return nil, refuse("symbolic links are not allowed")
		case mode.Type()&^fs.ModeDir != 0:
			return nil, refuse("not a regular file or directory (%v)", mode.Type())
		case dir && f.UncompressedSize64 != 0:
			return nil, refuse("directory entry has content")
		}
		if _, dup := seen[name]; dup {
			return nil, refuse("duplicate entry name")
		}
		if !dir && parents[name] {
			return nil, refuse("file is also the parent directory of another entry")
		}
		for p := path.Dir(name); p != "."; p = path.Dir(p) {
			if isDir, ok := seen[p]; ok && !isDir {
				return nil, refuse("parent %s is a file entry", excerpt.Quote(p))
			}
			parents[p] = true
		}
		seen[name] = dir
		out = append(out, UnpackEntry{Name: name, Dir: dir})
	}
	return out, nil
}

// canonicalEntryName returns the entry name without its trailing slash, or
// why it is refused.
func canonicalEntryName(raw string) (name, why string) {
	switch {
	case raw == "" || raw == "/":
		return "", "empty name"
	case strings.ContainsRune(raw, 0):
		return "", "name contains a NUL byte"
	case strings.Contains(raw, `\`):
		return "", "name contains a backslash"
	case strings.HasPrefix(raw, "/") || filepath.IsAbs(filepath.FromSlash(raw)) || filepath.VolumeName(filepath.FromSlash(raw)) != "":
		return "", "name is absolute"
	}
	name = strings.TrimSuffix(raw, "/")
	if !filepath.IsLocal(filepath.FromSlash(name)) {
		return "", "name leaves the package directory"
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return "", "name is not canonical"
		}
	}
	return name, ""
}

// HashPackageDir is the h1: hash of an unpacked package directory as a
// client computes it (dirhash's Hash1 of its files), the directory read as
// hostile input: through an os.Root, regular files only, within limits.
func HashPackageDir(dir string, limits ZipLimits) (string, error) {
	limits = limits.WithDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }()
	var files []string
	var size int64
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is a %s, not a regular file", name, atomicfile.TypeName(d.Type()))
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if size += info.Size(); size > limits.MaxUnpackedBytes || len(files) >= limits.MaxEntries {
			return fmt.Errorf("the package exceeds the limits of %d files and %d unpacked bytes", limits.MaxEntries, limits.MaxUnpackedBytes)
		}
		files = append(files, name)
		return nil
	})
	if err != nil {
		return "", err
	}
	return dirhash.Hash1(files, func(name string) (io.ReadCloser, error) { return root.Open(name) })
}

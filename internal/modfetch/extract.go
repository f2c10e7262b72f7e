package modfetch

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/excerpt"

	"github.com/tfmirror/tfmirror/hashing"
)

// maxLinkTarget bounds the target of a link stored in a zip (its content).
const maxLinkTarget = 4096

// extractor writes archive entries under a root, refusing what could leave
// it and counting entries and bytes against the limits.
type extractor struct {
	root    *os.Root
	limits  hashing.ModuleLimits
	entries int
	left    int64           // bytes that may still be written
	dirs    map[string]bool // directories known to be real ones, made or checked
}

// extract extracts the archive in file, of kind, into dst.
func extract(file string, kind archiveKind, dst string, limits hashing.ModuleLimits) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	x := &extractor{root: root, limits: limits, left: limits.MaxBytes, dirs: map[string]bool{}}
	if kind == kindZip {
		return x.zip(file)
	}
	return x.targz(file)
}

// zip extracts a zip archive.
func (x *extractor) zip(file string) error {
	zr, err := zip.OpenReader(file)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // names are checked one by one
		return fmt.Errorf("open zip: %w", err)
	}
	defer func() { _ = zr.Close() }()
	if len(zr.File) > x.limits.MaxFiles {
		return fmt.Errorf("archive has %d entries, more than the limit of %d", len(zr.File), x.limits.MaxFiles)
	}
	for _, f := range zr.File {
		if err := x.zipEntry(f); err != nil {
			return err
		}
	}
	return nil
}

// zipEntry extracts one zip entry.
func (x *extractor) zipEntry(f *zip.File) error {
	mode := f.Mode()
	if mode.Type()&^(fs.ModeDir|fs.ModeSymlink) != 0 {
		return refuse(f.Name, "is a %s", atomicfile.TypeName(mode))
	}
	r, err := f.Open()
	if err != nil {
		return fmt.Errorf("read entry %s: %w", excerpt.Quote(f.Name), err)
	}
	defer func() { _ = r.Close() }()
	switch {
	case mode.IsDir():
		return x.dir(f.Name)
	case mode&fs.ModeSymlink != 0:
		target, err := io.ReadAll(io.LimitReader(r, maxLinkTarget+1))
		if err != nil {
			return fmt.Errorf("read entry %s: %w", excerpt.Quote(f.Name), err)
		}
		return x.symlink(f.Name, string(target))
	}
	return x.file(f.Name, r, mode)
}

// targz extracts a gzip-compressed tar archive.
func (x *extractor) targz(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	gz, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("read gzip: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		if err := x.tarEntry(tr, hdr); err != nil {
			return err
		}
	}
}

// tarEntry extracts one tar entry.
func (x *extractor) tarEntry(tr *tar.Reader, hdr *tar.Header) error {
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(hdr.Name)
	case tar.TypeReg:
		return x.file(hdr.Name, tr, hdr.FileInfo().Mode())
	case tar.TypeSymlink:
		return x.symlink(hdr.Name, hdr.Linkname)
	case tar.TypeLink:
		return x.hardlink(hdr.Name, hdr.Linkname, hdr.FileInfo().Mode())
	case tar.TypeXGlobalHeader: // pax comments, such as git archive's commit id
		return nil
	case tar.TypeChar, tar.TypeBlock:
		return refuse(hdr.Name, "is a device")
	case tar.TypeFifo:
		return refuse(hdr.Name, "is a named pipe")
	}
	return refuse(hdr.Name, "has the unsupported tar type %q", hdr.Typeflag)
}

// refuse returns why an entry cannot be extracted.
func refuse(entry, format string, args ...any) error {
	return &hashing.EntryError{Entry: entry, Reason: fmt.Sprintf(format, args...)}
}

// begin counts an entry and returns its cleaned name ("" for the root).
func (x *extractor) begin(raw string) (string, error) {
	x.entries++
	if x.entries > x.limits.MaxFiles {
		return "", refuse(raw, "archive has more than the limit of %d entries", x.limits.MaxFiles)
	}
	name, why := entryName(raw)
	if why != "" {
		return "", refuse(raw, "%s", why)
	}
	return name, nil
}

// entryName cleans an entry's name: "./" prefixes, doubled and trailing
// slashes go, and "" stands for the root. It refuses (saying why) an
// empty, absolute or escaping name, or one holding a NUL or a backslash.
func entryName(raw string) (string, string) {
	switch {
	case raw == "":
		return "", "empty name"
	case strings.HasPrefix(raw, "/"):
		return "", "name is absolute"
	case strings.ContainsAny(raw, "\\\x00"):
		return "", "name contains a backslash or a NUL byte"
	}
	var parts []string
	for _, part := range strings.Split(raw, "/") {
		switch part {
		case "", ".":
		case "..":
			return "", "name leaves the package directory (holds \"..\")"
		default:
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, "/"), ""
}

// dir makes a directory entry (and its parents).
func (x *extractor) dir(raw string) error {
	name, err := x.begin(raw)
	if err != nil || name == "" {
		return err
	}
	return x.mkdirs(raw, name)
}

// mkdirs makes name and its parents as real directories, mode 0755,
// refusing to go through a link or a file.
func (x *extractor) mkdirs(raw, name string) error {
	parts := strings.Split(name, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if x.dirs[p] {
			continue
		}
		if err := x.mkdir(raw, p); err != nil {
			return err
		}
		x.dirs[p] = true
	}
	return nil
}

// mkdir makes one directory, or checks that one is there.
func (x *extractor) mkdir(raw, p string) error {
	info, err := x.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := x.root.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
		}
		if err := x.root.Chmod(p, 0o755); err != nil { // whatever the umask
			return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
	case info.Mode()&fs.ModeSymlink != 0:
		return refuse(raw, "goes through the symbolic link %s", excerpt.Quote(p))
	case !info.IsDir():
		return refuse(raw, "goes through %s, which is a %s", excerpt.Quote(p), atomicfile.TypeName(info.Mode()))
	}
	return nil
}

// parent makes the directories above name.
func (x *extractor) parent(raw, name string) error {
	if dir := path.Dir(name); dir != "." {
		return x.mkdirs(raw, dir)
	}
	return nil
}

// file writes a regular file entry with its content.
func (x *extractor) file(raw string, r io.Reader, mode fs.FileMode) error {
	name, err := x.begin(raw)
	if err != nil {
		return err
	}
	return x.write(raw, name, r, mode)
}

// write writes a file's content, mode 0644 or 0755, within the bytes left.
func (x *extractor) write(raw, name string, r io.Reader, mode fs.FileMode) error {
	if name == "" {
		return refuse(raw, "a file cannot be the package root")
	}
	if err := x.parent(raw, name); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	out, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return refuse(raw, "is a duplicate of an entry already extracted")
	}
	if err != nil {
		return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
	}
	n, err := io.Copy(out, io.LimitReader(r, x.left+1))
	if err == nil {
		err = out.Chmod(perm) // whatever the umask
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
	case n > x.left:
		return refuse(raw, "archive unpacks to more than the limit of %d bytes", x.limits.MaxBytes)
	}
	x.left -= n
	return nil
}

// symlink makes a link whose target, read from where it is, stays inside
// the package (checkTree checks again once links can chain).
func (x *extractor) symlink(raw, target string) error {
	name, err := x.begin(raw)
	if err != nil {
		return err
	}
	switch {
	case name == "":
		return refuse(raw, "a link cannot be the package root")
	case target == "" || len(target) > maxLinkTarget || strings.ContainsAny(target, "\\\x00"):
		return refuse(raw, "symbolic link has an empty, overlong or invalid target")
	case strings.HasPrefix(target, "/"):
		return refuse(raw, "symbolic link to the absolute path %s", excerpt.Quote(target))
	}
	if to := path.Join(path.Dir(name), target); to == ".." || strings.HasPrefix(to, "../") {
		return refuse(raw, "symbolic link to %s leaves the package directory", excerpt.Quote(target))
	}
	if err := x.parent(raw, name); err != nil {
		return err
	}
	if err := x.root.Symlink(target, name); err != nil {
		return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
	}
	return nil
}

// hardlink extracts a hard link as a copy of the regular file it names,
// which must already be extracted.
func (x *extractor) hardlink(raw, target string, mode fs.FileMode) error {
	name, err := x.begin(raw)
	if err != nil {
		return err
	}
	to, why := entryName(target)
	if why != "" || to == "" {
		return refuse(raw, "hard link to %s leaves the package directory or is invalid", excerpt.Quote(target))
	}
	if dir := path.Dir(to); dir != "." && !x.dirs[dir] {
		return refuse(raw, "hard link to %s, which is not a file extracted before it", excerpt.Quote(target))
	}
	info, err := x.root.Lstat(to)
	if err != nil || !info.Mode().IsRegular() {
		return refuse(raw, "hard link to %s, which is not a file extracted before it", excerpt.Quote(target))
	}
	in, err := x.root.Open(to)
	if err != nil {
		return fmt.Errorf("extract %s: %w", excerpt.Quote(raw), err)
	}
	defer func() { _ = in.Close() }()
	return x.write(raw, name, in, mode)
}

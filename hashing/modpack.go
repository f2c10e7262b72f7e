package hashing

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// ModuleLimits bound the work of packing (and, for its callers, of
// unpacking) a module package. A zero field takes its default from
// DefaultModuleLimits.
type ModuleLimits struct {
	MaxFiles int   // entries of every kind: files, directories and links
	MaxBytes int64 // the sum of the files' contents, unpacked
}

// DefaultModuleLimits fit real module packages with a wide margin: modules
// are source code, and the largest ones in use hold a few thousand files.
var DefaultModuleLimits = ModuleLimits{MaxFiles: 20_000, MaxBytes: 1 << 30}

// WithDefaults returns l with its zero (or negative) fields set from
// DefaultModuleLimits.
func (l ModuleLimits) WithDefaults() ModuleLimits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultModuleLimits.MaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultModuleLimits.MaxBytes
	}
	return l
}

// Zip is l (its defaults filled in) as the limits a module package's zip
// is checked with (CheckZip): wherever a module package is read (a
// verify, a bundle made or imported), it is held to the module limits a
// build packs it under, never to the larger limits of provider packages.
func (l ModuleLimits) Zip() ZipLimits {
	l = l.WithDefaults()
	return ZipLimits{MaxEntries: l.MaxFiles, MaxUnpackedBytes: l.MaxBytes}
}

// ModulePack says what PackModule wrote.
type ModulePack struct {
	Files int   // file entries (links stored as files included), not directories
	Bytes int64 // the sum of the files' contents, unpacked
}

// moduleEpoch is the modification time of every entry of a module package,
// 1980-01-01 00:00:00 (the earliest MS-DOS time), as MS-DOS date and time
// fields: day 1 of month 1 of year 0 (1980), and midnight.
const (
	moduleEpochDate = 1<<5 | 1
	moduleEpochTime = 0
)

// PackModule writes the module package rooted at dir as a zip to w. The
// bytes are a function of the content only: the names, contents and
// executable bits of the files and the names of the directories, not the
// order they were made in, their times, owners or other mode bits.
//
// It walks dir without following links and writes every entry in byte
// order of its slash-separated name: each directory (a name ending in "/",
// so empty directories survive; stored, as zip directories are) and each
// regular file (deflated, mode 0644, or 0755 if any executable bit was
// set). Every entry has the modification time 1980-01-01 00:00:00 in its
// MS-DOS fields and no extra fields. A ".git" directory at any level is left
// out with everything in it.
//
// A symbolic link whose target, resolved inside dir (possibly through other
// links in it), is a regular file is written as a regular file with the
// target's content and mode. A link that points outside dir, dangles or
// points at a directory is refused, and so are devices, sockets and named
// pipes, names holding a backslash or a line break (which no package
// could unpack or hash as named), and a package that exceeds lim: the
// error names the path relative to dir. What was written to w before a
// refusal is not a valid archive.
func PackModule(dir string, w io.Writer, lim ModuleLimits) (ModulePack, error) {
	lim = lim.WithDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return ModulePack{}, err
	}
	defer func() { _ = root.Close() }() // read-only
	entries, err := collectModule(root, lim)
	if err != nil {
		return ModulePack{}, err // the caller names the module and where it came from
	}
	p := &packer{root: root, dir: dir, zw: zip.NewWriter(w), limit: lim.MaxBytes, left: lim.MaxBytes}
	for _, e := range entries {
		if err := p.write(e); err != nil {
			return ModulePack{}, err
		}
	}
	if err := p.zw.Close(); err != nil {
		return ModulePack{}, fmt.Errorf("finish zip: %w", err)
	}
	return ModulePack{Files: p.files, Bytes: lim.MaxBytes - p.left}, nil
}

// moduleEntry is one entry of a module package, found by collectModule.
type moduleEntry struct {
	name string      // slash-separated, relative to the root; a directory's ends in "/"
	info fs.FileInfo // of the file to read (a link's target); nil for directories
	link bool        // a symbolic link, read through its target
}

// collectModule walks the root and returns its entries in byte order of
// their names, refusing what cannot be packed.
func collectModule(root *os.Root, lim ModuleLimits) ([]moduleEntry, error) {
	var entries []moduleEntry
	var size int64 // as the walk found the files; the copy counts again
	err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", name, err)
		}
		if name == "." {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		e, err := moduleEntryOf(root, name, d)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		if e.info != nil {
			size += e.info.Size()
		}
		switch {
		case len(entries) > lim.MaxFiles:
			return fmt.Errorf("%s: module package has more than the limit of %d entries", name, lim.MaxFiles)
		case size > lim.MaxBytes:
			return fmt.Errorf("%s: module package exceeds the limit of %d unpacked bytes", name, lim.MaxBytes)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b moduleEntry) int { return strings.Compare(a.name, b.name) })
	return entries, nil
}

// moduleEntryOf checks one walked path and returns its entry.
func moduleEntryOf(root *os.Root, name string, d fs.DirEntry) (moduleEntry, error) {
	if strings.ContainsAny(name, "\\\n\r") {
		return moduleEntry{}, fmt.Errorf("%s: name contains a backslash or a line break", excerpt.Quote(name))
	}
	switch typ := d.Type(); {
	case typ.IsDir():
		return moduleEntry{name: name + "/"}, nil
	case typ&fs.ModeSymlink != 0:
		info, err := linkTarget(root, name)
		return moduleEntry{name: name, info: info, link: true}, err
	case typ.IsRegular():
		info, err := d.Info()
		if err != nil {
			return moduleEntry{}, fmt.Errorf("stat %s: %w", name, err)
		}
		return moduleEntry{name: name, info: info}, nil
	default:
		return moduleEntry{}, fmt.Errorf("%s is a %s: only files, directories and links to files can be packed", name, atomicfile.TypeName(typ))
	}
}

// linkTarget returns what the link at name resolves to inside the root, if
// that is a regular file.
func linkTarget(root *os.Root, name string) (fs.FileInfo, error) {
	info, err := root.Stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("symbolic link %s dangles: %w", name, err)
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("symbolic link %s is in a loop of links: %w", name, err)
	case err != nil:
		return nil, fmt.Errorf("symbolic link %s points outside the module package: %w", name, err)
	case info.IsDir():
		return nil, fmt.Errorf("symbolic link %s points at a directory: a module package is a zip, which OpenTofu unpacks without links, "+
			"and a copy of the directory in the link's place would resolve the relative paths in it (../, path.module) from another place "+
			"than OpenTofu resolves them from through the link; replace the link with the directory itself", name)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("symbolic link %s points at a %s, not a regular file", name, atomicfile.TypeName(info.Mode()))
	}
	return info, nil
}

// packer writes entries to a zip, counting files and the bytes left.
type packer struct {
	root  *os.Root
	dir   string
	zw    *zip.Writer
	files int
	limit int64 // the most bytes of content
	left  int64 // what is left of limit
}

// write writes one entry: a directory, or a file with its content.
func (p *packer) write(e moduleEntry) error {
	h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
	// The MS-DOS fields, not Modified: setting Modified adds an extended
	// timestamp extra field.
	h.ModifiedDate, h.ModifiedTime = moduleEpochDate, moduleEpochTime //nolint:staticcheck // see above
	if e.info == nil {
		h.SetMode(fs.ModeDir | 0o755)
		_, err := p.zw.CreateHeader(h)
		if err != nil {
			return fmt.Errorf("write %s: %w", e.name, err)
		}
		return nil
	}
	h.SetMode(0o644)
	if e.info.Mode()&0o111 != 0 {
		h.SetMode(0o755)
	}
	f, err := p.open(e)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read-only
	zf, err := p.zw.CreateHeader(h)
	if err != nil {
		return fmt.Errorf("write %s: %w", e.name, err)
	}
	return p.copy(zf, f, e.name)
}

// open opens the file an entry is read from: a regular file with
// OpenRegular, a link's target through the root (so it cannot leave it),
// checking that it is still what the walk found.
func (p *packer) open(e moduleEntry) (*os.File, error) {
	var f *os.File
	var err error
	if e.link {
		f, err = p.root.Open(e.name)
	} else {
		f, err = OpenRegular(filepath.Join(p.dir, filepath.FromSlash(e.name)))
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", e.name, err)
	}
	now, err := f.Stat()
	if err != nil || !os.SameFile(now, e.info) || !now.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("open %s: changed while the module was packed", e.name)
	}
	return f, nil
}

// copy copies a file's content into its entry within the bytes left.
func (p *packer) copy(dst io.Writer, src io.Reader, name string) error {
	n, err := io.Copy(dst, io.LimitReader(src, p.left+1))
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if n > p.left {
		return fmt.Errorf("%s: module package exceeds the limit of %d unpacked bytes", name, p.limit)
	}
	p.left -= n
	p.files++
	return nil
}

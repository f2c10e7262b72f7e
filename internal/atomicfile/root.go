package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// errLink is wrapped by the error for a symbolic link found beneath a
// directory tfmirror writes: it never follows a link it did not create.
var errLink = errors.New("tfmirror follows no symbolic links inside a mirror directory")

// ErrNotRegular means something other than a regular file (a link, a
// directory, a device) is where a file is read or written.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is why ReadFile refuses a file larger than its limit.
var ErrTooLarge = errors.New("larger than the limit")

// Root is a directory tfmirror reads and writes beneath without ever
// following a symbolic link. os.Root refuses any path that leaves the
// directory, even through a link swapped in while it works; on top of
// that every directory on a path is checked with Lstat, the last
// component is opened with O_NOFOLLOW where the system has it, and what
// is opened is checked to be a regular file before a byte is read, so a
// link, a device or a named pipe is refused, never followed or read.
//
// Paths given to its methods are slash-separated and relative to the
// directory ("." for the directory itself); messages name the full path.
type Root struct {
	r   *os.Root
	dir string
}

// OpenRoot opens dir, which the caller named and may itself be a
// link. A missing directory is an error wrapping fs.ErrNotExist.
func OpenRoot(dir string) (*Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Root{r: r, dir: dir}, nil
}

// Close releases the directory.
func (t *Root) Close() error { return t.r.Close() }

// OpenRoot opens the directory dir beneath t as a Root of its own, whose
// messages name its full path. The caller has made sure dir is a
// directory, not a link (MkdirAll, CheckDir).
func (t *Root) OpenRoot(dir string) (*Root, error) {
	r, err := t.r.OpenRoot(filepath.FromSlash(dir))
	if err != nil {
		return nil, t.pathErr("open", dir, err)
	}
	return &Root{r: r, dir: t.Path(dir)}, nil
}

// FS is the directory as an fs.FS, for fs.WalkDir: it never leaves the
// directory, and a walk lists a link as a link, never descending into
// it.
func (t *Root) FS() fs.FS { return t.r.FS() }

// Path is the full path of rel, for messages and for callers that need
// one.
func (t *Root) Path(rel string) string {
	return filepath.Join(t.dir, filepath.FromSlash(rel))
}

// checkRel refuses a path that is not a plain relative one: absolute,
// with "..", "." or empty elements, or a backslash.
func (t *Root) checkRel(rel string) error {
	if !fs.ValidPath(rel) || strings.Contains(rel, `\`) {
		return fmt.Errorf("%s: %q is not a path inside the directory", t.dir, rel)
	}
	return nil
}

// pathErr rewrites err, as os.Root reports it with a relative name, into
// an error naming the full path.
func (t *Root) pathErr(op, rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: t.Path(rel), Err: err}
}

// TypeName names a file's type in messages ("named pipe", "symbolic
// link"): the one description every refusal of a non-regular file uses.
func TypeName(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return "symbolic link"
	case mode.IsDir():
		return "directory"
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe"
	case mode&fs.ModeSocket != 0:
		return "socket"
	case mode&fs.ModeDevice != 0:
		return "device"
	case mode.IsRegular():
		return "file"
	}
	return "special file"
}

// notRegular is the error for something other than a regular file where
// a file is read or written.
func (t *Root) notRegular(rel string, mode fs.FileMode) error {
	if mode&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: %w: the destination has a symbolic link here, not a file (%w)", t.Path(rel), ErrNotRegular, errLink)
	}
	return fmt.Errorf("%s: %w: the destination has a %s here, not a file", t.Path(rel), ErrNotRegular, TypeName(mode))
}

// notDir is the error for something other than a directory on a path.
func (t *Root) notDir(rel string, mode fs.FileMode) error {
	if mode&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: a symbolic link is in the way of a directory: %w", t.Path(rel), errLink)
	}
	return fmt.Errorf("%s: a %s is in the way of a directory", t.Path(rel), TypeName(mode))
}

// Lstat describes rel itself, a link included.
func (t *Root) Lstat(rel string) (fs.FileInfo, error) {
	info, err := t.r.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return nil, t.pathErr("lstat", rel, err)
	}
	return info, nil
}

// CheckDir makes sure dir and every directory above it, up to the root,
// is a directory and not a link. A missing one is an error wrapping
// fs.ErrNotExist.
func (t *Root) CheckDir(dir string) error {
	return t.eachDir(dir, func(sub string) error {
		info, err := t.Lstat(sub)
		if err != nil {
			return err
		}
		if !info.IsDir() {
			return t.notDir(sub, info.Mode())
		}
		return nil
	})
}

// eachDir calls fn for every directory on the path dir, from the top one
// down to dir itself, after refusing a dir that is not a plain relative
// path; "." has none.
func (t *Root) eachDir(dir string, fn func(sub string) error) error {
	if dir == "." {
		return nil
	}
	if err := t.checkRel(dir); err != nil {
		return err
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		if err := fn(path.Join(parts[:i+1]...)); err != nil {
			return err
		}
	}
	return nil
}

// MkdirAll creates dir and its missing parents beneath the root with
// DirMode, whatever the umask. A link or a file on the way is an error.
func (t *Root) MkdirAll(dir string) error {
	return t.eachDir(dir, t.mkdir)
}

// mkdir creates dir if it is missing; an existing directory stays as it
// is. Its parent has been checked.
func (t *Root) mkdir(dir string) error {
	info, err := t.Lstat(dir)
	if err == nil {
		if !info.IsDir() {
			return t.notDir(dir, info.Mode())
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("create directory: %w", err)
	}
	err = t.r.Mkdir(filepath.FromSlash(dir), DirMode)
	if errors.Is(err, fs.ErrExist) {
		return t.CheckDir(dir) // made meanwhile: it must be a directory
	}
	if err != nil {
		return fmt.Errorf("create directory: %w", t.pathErr("mkdir", dir, err))
	}
	d, err := t.openDir(dir)
	if err != nil {
		return err
	}
	err = d.Chmod(DirMode)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create directory %s: %w", t.Path(dir), err)
	}
	return nil
}

// openDir opens the directory dir with no link on its path (walkDir, the
// system's way), and checks that what it opened is a directory.
func (t *Root) openDir(dir string) (*os.File, error) {
	if dir != "." {
		if err := t.checkRel(dir); err != nil {
			return nil, err
		}
	}
	d, err := walkDir(t, dir)
	if err != nil {
		return nil, err
	}
	info, err := d.Stat()
	if err == nil && !info.IsDir() {
		err = t.notDir(dir, info.Mode())
	}
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// ReadDir lists the directory dir; entries describe links as links.
func (t *Root) ReadDir(dir string) ([]fs.DirEntry, error) {
	d, err := t.openDir(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, t.pathErr("read directory", dir, err)
	}
	return entries, nil
}

// StatFile describes the regular file rel; a link, a directory or any
// other kind of file is an error wrapping ErrNotRegular.
func (t *Root) StatFile(rel string) (fs.FileInfo, error) {
	if err := t.checkRel(rel); err != nil {
		return nil, err
	}
	d, err := t.openDir(path.Dir(rel)) // no link on the way
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }()
	info, err := lstatAt(t, d, rel)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, t.notRegular(rel, info.Mode())
	}
	return info, nil
}

// checkTarget accepts a path a file is about to be written to: missing,
// or a regular file, with only directories on the way.
func (t *Root) checkTarget(rel string) error {
	_, err := t.StatFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// OpenFile opens the regular file rel with flag (os.O_RDONLY, os.O_RDWR,
// with os.O_CREATE...). Anything but a regular file is refused before it
// is opened, so a device or a pipe is never read, and the opened file is
// checked again.
func (t *Root) OpenFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := t.checkRel(rel); err != nil {
		return nil, err
	}
	d, err := t.openDir(path.Dir(rel)) // no link on the way
	if err != nil {
		return nil, err
	}
	defer func() { _ = d.Close() }()
	info, err := lstatAt(t, d, rel)
	creating := flag&os.O_CREATE != 0 && errors.Is(err, fs.ErrNotExist)
	switch {
	case err != nil && !creating:
		return nil, err
	case err == nil && !info.Mode().IsRegular():
		return nil, t.notRegular(rel, info.Mode())
	}
	return openAt(t, d, rel, flag, perm)
}

// ReadFile reads the regular file rel, refusing one larger than limit
// bytes without reading past the limit.
func (t *Root) ReadFile(rel string, limit int64) ([]byte, error) {
	f, err := t.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() > limit {
		return nil, fmt.Errorf("read %s: %w of %d bytes", t.Path(rel), ErrTooLarge, limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.Path(rel), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: %w of %d bytes", t.Path(rel), ErrTooLarge, limit)
	}
	return data, nil
}

// tempName is a new name for a temporary file of an atomic write of base:
// tfmirror's own prefix, then base and a random suffix.
func tempName(base string) string {
	return TempPrefix + base + "-" + randomSuffix()
}

// createTemp creates a new temporary file for base in the directory dir,
// never through a link. It returns the file and its path.
func (t *Root) createTemp(dir, base string) (*os.File, string, error) {
	return t.CreateNew(dir, TempPrefix+base+"-")
}

// CreateNew creates a new empty file, readable and writable by its owner
// only, in the directory dir, named prefix followed by a random suffix,
// never through a link. It returns the file and its path relative to t.
func (t *Root) CreateNew(dir, prefix string) (*os.File, string, error) {
	d, err := t.openDir(dir)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = d.Close() }()
	for {
		rel := path.Join(dir, prefix+randomSuffix())
		f, err := openAt(t, d, rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // a random name taken: take another
		}
		return f, rel, err
	}
}

// WriteFile atomically replaces rel with data: a temporary file in the
// same directory, synced, made world-readable, renamed into place, and
// the directory synced.
func (t *Root) WriteFile(rel string, data []byte) error {
	return t.writeFile(rel, data, false)
}

// WritePrivate is WriteFile for a secret: the file stays readable and
// writable by its owner only, from the moment it exists.
func (t *Root) WritePrivate(rel string, data []byte) error {
	return t.writeFile(rel, data, true)
}

func (t *Root) writeFile(rel string, data []byte, private bool) error {
	if err := t.PrepareTarget(rel); err != nil {
		return fmt.Errorf("write %s: %w", t.Path(rel), err)
	}
	f, tmp, err := t.createTemp(path.Dir(rel), path.Base(rel))
	if err != nil {
		return fmt.Errorf("write %s: %w", t.Path(rel), err)
	}
	write := writeAndSync
	if private {
		write = writeAndSyncPrivate
	}
	if err := write(f, data); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("write %s: %w", t.Path(rel), err)
	}
	return t.commit(tmp, rel)
}

// PrepareTarget creates the directories of rel and checks that rel is
// missing or a regular file.
func (t *Root) PrepareTarget(rel string) error {
	if err := t.checkRel(rel); err != nil {
		return err
	}
	if err := t.MkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	return t.checkTarget(rel)
}

// commit renames the synced temporary file tmp onto rel, in the same
// directory, and syncs the directory. A failure removes tmp.
func (t *Root) commit(tmp, rel string) error {
	if err := t.r.Rename(filepath.FromSlash(tmp), filepath.FromSlash(rel)); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("publish %s: %w", t.Path(rel), t.pathErr("rename", rel, err))
	}
	return t.syncDir(path.Dir(rel))
}

// syncDir flushes the directory dir, as SyncDir does.
func (t *Root) syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := t.openDir(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !isUnsupportedSync(err) {
		return fmt.Errorf("sync directory %s: %w", t.Path(dir), err)
	}
	return nil
}

// Place makes rel the file src (a local file outside or inside the
// root) atomically: src moved there when move is set and the system
// allows, else hard-linked, else copied. src must be a regular file; a
// link is refused, never published.
func (t *Root) Place(src, rel string, move bool) error {
	if err := checkLocalFile(src); err != nil {
		return err
	}
	if err := t.PrepareTarget(rel); err != nil {
		return fmt.Errorf("publish %s: %w", t.Path(rel), err)
	}
	d, err := t.openDir(path.Dir(rel))
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	tmp := path.Join(path.Dir(rel), tempName(path.Base(rel)))
	placed := move && renameAt(t, d, src, tmp) == nil
	if !placed && linkAt(t, d, src, tmp) != nil {
		return t.copyIn(src, rel)
	}
	if _, err := t.StatFile(tmp); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("publish %s from %s: %w", t.Path(rel), src, err)
	}
	return t.commit(tmp, rel)
}

// copyIn copies src to rel atomically without holding it in memory.
func (t *Root) copyIn(src, rel string) error {
	in, err := openLocalFile(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	if err := t.PrepareTarget(rel); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	out, tmp, err := t.createTemp(path.Dir(rel), path.Base(rel))
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := SyncClose(out); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return t.commit(tmp, rel)
}

// Remove deletes rel, a link itself rather than its target; a missing
// rel is not an error, a link on the way to it is.
func (t *Root) Remove(rel string) error {
	if err := t.checkRel(rel); err != nil {
		return err
	}
	err := t.CheckDir(path.Dir(rel))
	if err == nil {
		err = t.r.Remove(filepath.FromSlash(rel))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return t.pathErr("remove", rel, err)
	}
	return nil
}

// RemoveAll removes rel and everything below it; a link is removed, never
// followed. A missing rel is not an error.
func (t *Root) RemoveAll(rel string) error {
	if err := t.r.RemoveAll(filepath.FromSlash(rel)); err != nil {
		return t.pathErr("remove", rel, err)
	}
	return nil
}

// Rename renames from to to, both beneath t; a link at from is renamed
// itself, not what it points to. The directory is not synced.
func (t *Root) Rename(from, to string) error {
	if err := t.r.Rename(filepath.FromSlash(from), filepath.FromSlash(to)); err != nil {
		return t.pathErr("rename", from, err)
	}
	return nil
}

// RefuseLink returns an error naming rel if rel itself is a symbolic
// link, which a caller about to replace what is at rel would otherwise
// read through. Anything else at rel, or nothing, is not an error.
func (t *Root) RefuseLink(rel string) error {
	info, err := t.Lstat(rel)
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return t.notDir(rel, info.Mode())
	}
	return nil
}

// checkLocalFile refuses a local file that is not a regular one.
func checkLocalFile(name string) error {
	info, err := os.Lstat(name)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%s: %w: it is a %s", name, ErrNotRegular, TypeName(info.Mode()))
	}
	return nil
}

// openLocalFile opens a local file for reading, refusing anything but a
// regular file: a link or a device is never read.
func openLocalFile(name string) (*os.File, error) {
	if err := checkLocalFile(name); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(name, os.O_RDONLY|oOpenSafe, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w: it is a %s", name, ErrNotRegular, TypeName(info.Mode()))
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFileIn atomically replaces rel, a slash-separated path relative
// to the directory root, with data, as WriteFile does, but never through
// a symbolic link below root: a link (or a file) where a directory
// should be, or anything but a regular file at rel, is an error naming
// the path. root itself is created if missing, and may be a link.
func WriteFileIn(root, rel string, data []byte) error {
	if err := MkdirAll(root); err != nil {
		return err
	}
	t, err := OpenRoot(root)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(root, filepath.FromSlash(rel)), err)
	}
	defer func() { _ = t.Close() }()
	return t.WriteFile(rel, data)
}

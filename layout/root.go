package layout

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tfmirror/tfmirror/hashing"
)

// errLink is wrapped by the error for a symbolic link found beneath a
// directory tfmirror writes: it never follows a link it did not create.
var errLink = errors.New("tfmirror follows no symbolic links inside a mirror directory")

// treeRoot is a directory tfmirror reads and writes beneath without ever
// following a symbolic link. os.Root refuses any path that leaves the
// directory, even through a link swapped in while it works; on top of
// that every directory on a path is checked with Lstat, the last
// component is opened with O_NOFOLLOW where the system has it, and what
// is opened is checked to be a regular file before a byte is read, so a
// link, a device or a named pipe is refused, never followed or read.
//
// Paths given to its methods are slash-separated and relative to the
// directory ("." for the directory itself); messages name the full path.
type treeRoot struct {
	r   *os.Root
	dir string
}

// openTreeRoot opens dir, which the caller named and may itself be a
// link. A missing directory is an error wrapping fs.ErrNotExist.
func openTreeRoot(dir string) (*treeRoot, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &treeRoot{r: r, dir: dir}, nil
}

// Close releases the directory.
func (t *treeRoot) Close() error { return t.r.Close() }

// path is the full path of rel, for messages and for callers that need
// one.
func (t *treeRoot) path(rel string) string {
	return filepath.Join(t.dir, filepath.FromSlash(rel))
}

// checkRel refuses a path that is not a plain relative one: absolute,
// with "..", "." or empty elements, or a backslash.
func (t *treeRoot) checkRel(rel string) error {
	if !fs.ValidPath(rel) || strings.Contains(rel, `\`) {
		return fmt.Errorf("%s: %q is not a path inside the directory", t.dir, rel)
	}
	return nil
}

// pathErr rewrites err, as os.Root reports it with a relative name, into
// an error naming the full path.
func (t *treeRoot) pathErr(op, rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: t.path(rel), Err: err}
}

// TypeName names a file's type in messages ("named pipe", "symbolic
// link"): hashing.TypeName, the one description every refusal of a
// non-regular file uses.
func TypeName(mode fs.FileMode) string { return hashing.TypeName(mode) }

// notRegular is the error for something other than a regular file where
// a file is read or written.
func (t *treeRoot) notRegular(rel string, mode fs.FileMode) error {
	if mode&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: %w: the destination has a symbolic link here, not a file (%w)", t.path(rel), ErrNotRegular, errLink)
	}
	return fmt.Errorf("%s: %w: the destination has a %s here, not a file", t.path(rel), ErrNotRegular, TypeName(mode))
}

// notDir is the error for something other than a directory on a path.
func (t *treeRoot) notDir(rel string, mode fs.FileMode) error {
	if mode&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s: a symbolic link is in the way of a directory: %w", t.path(rel), errLink)
	}
	return fmt.Errorf("%s: a %s is in the way of a directory", t.path(rel), TypeName(mode))
}

// lstat describes rel itself, a link included.
func (t *treeRoot) lstat(rel string) (fs.FileInfo, error) {
	info, err := t.r.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return nil, t.pathErr("lstat", rel, err)
	}
	return info, nil
}

// checkDir makes sure dir and every directory above it, up to the root,
// is a directory and not a link. A missing one is an error wrapping
// fs.ErrNotExist.
func (t *treeRoot) checkDir(dir string) error {
	return t.eachDir(dir, func(sub string) error {
		info, err := t.lstat(sub)
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
func (t *treeRoot) eachDir(dir string, fn func(sub string) error) error {
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

// mkdirAll creates dir and its missing parents beneath the root with
// DirMode, whatever the umask. A link or a file on the way is an error.
func (t *treeRoot) mkdirAll(dir string) error {
	return t.eachDir(dir, t.mkdir)
}

// mkdir creates dir if it is missing; an existing directory stays as it
// is. Its parent has been checked.
func (t *treeRoot) mkdir(dir string) error {
	info, err := t.lstat(dir)
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
		return t.checkDir(dir) // made meanwhile: it must be a directory
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
		return fmt.Errorf("create directory %s: %w", t.path(dir), err)
	}
	return nil
}

// openDir opens the directory dir with no link on its path (walkDir, the
// system's way), and checks that what it opened is a directory.
func (t *treeRoot) openDir(dir string) (*os.File, error) {
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

// readDir lists the directory dir; entries describe links as links.
func (t *treeRoot) readDir(dir string) ([]fs.DirEntry, error) {
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

// statFile describes the regular file rel; a link, a directory or any
// other kind of file is an error wrapping ErrNotRegular.
func (t *treeRoot) statFile(rel string) (fs.FileInfo, error) {
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
func (t *treeRoot) checkTarget(rel string) error {
	_, err := t.statFile(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// openFile opens the regular file rel with flag (os.O_RDONLY, os.O_RDWR,
// with os.O_CREATE...). Anything but a regular file is refused before it
// is opened, so a device or a pipe is never read, and the opened file is
// checked again.
func (t *treeRoot) openFile(rel string, flag int, perm fs.FileMode) (*os.File, error) {
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

// readFile reads the regular file rel, refusing one larger than limit
// bytes without reading past the limit.
func (t *treeRoot) readFile(rel string, limit int64) ([]byte, error) {
	f, err := t.openFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err == nil && info.Size() > limit {
		return nil, fmt.Errorf("read %s: larger than the limit of %d bytes", t.path(rel), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.path(rel), err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s: larger than the limit of %d bytes", t.path(rel), limit)
	}
	return data, nil
}

// tempName is a new name for a temporary file of an atomic write of base:
// tfmirror's own prefix, then base and a random suffix.
func tempName(base string) string {
	return tempPrefix + base + "-" + randomSuffix()
}

// createTemp creates a new temporary file for base in the directory dir,
// never through a link. It returns the file and its path.
func (t *treeRoot) createTemp(dir, base string) (*os.File, string, error) {
	d, err := t.openDir(dir)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = d.Close() }()
	for {
		rel := path.Join(dir, tempName(base))
		f, err := openAt(t, d, rel, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // a random name taken: take another
		}
		return f, rel, err
	}
}

// writeFile atomically replaces rel with data: a temporary file in the
// same directory, synced, made world-readable, renamed into place, and
// the directory synced.
func (t *treeRoot) writeFile(rel string, data []byte) error {
	if err := t.prepareTarget(rel); err != nil {
		return fmt.Errorf("write %s: %w", t.path(rel), err)
	}
	f, tmp, err := t.createTemp(path.Dir(rel), path.Base(rel))
	if err != nil {
		return fmt.Errorf("write %s: %w", t.path(rel), err)
	}
	if err := writeAndSync(f, data); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("write %s: %w", t.path(rel), err)
	}
	return t.commit(tmp, rel)
}

// prepareTarget creates the directories of rel and checks that rel is
// missing or a regular file.
func (t *treeRoot) prepareTarget(rel string) error {
	if err := t.checkRel(rel); err != nil {
		return err
	}
	if err := t.mkdirAll(path.Dir(rel)); err != nil {
		return err
	}
	return t.checkTarget(rel)
}

// commit renames the synced temporary file tmp onto rel, in the same
// directory, and syncs the directory. A failure removes tmp.
func (t *treeRoot) commit(tmp, rel string) error {
	if err := t.r.Rename(filepath.FromSlash(tmp), filepath.FromSlash(rel)); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("publish %s: %w", t.path(rel), t.pathErr("rename", rel, err))
	}
	return t.syncDir(path.Dir(rel))
}

// syncDir flushes the directory dir, as SyncDir does.
func (t *treeRoot) syncDir(dir string) error {
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
		return fmt.Errorf("sync directory %s: %w", t.path(dir), err)
	}
	return nil
}

// place makes rel the file src (a local file outside or inside the
// root) atomically: src moved there when move is set and the system
// allows, else hard-linked, else copied. src must be a regular file; a
// link is refused, never published.
func (t *treeRoot) place(src, rel string, move bool) error {
	if err := checkLocalFile(src); err != nil {
		return err
	}
	if err := t.prepareTarget(rel); err != nil {
		return fmt.Errorf("publish %s: %w", t.path(rel), err)
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
	if _, err := t.statFile(tmp); err != nil {
		_ = t.r.Remove(filepath.FromSlash(tmp))
		return fmt.Errorf("publish %s from %s: %w", t.path(rel), src, err)
	}
	return t.commit(tmp, rel)
}

// copyIn copies src to rel atomically without holding it in memory.
func (t *treeRoot) copyIn(src, rel string) error {
	in, err := openLocalFile(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	if err := t.prepareTarget(rel); err != nil {
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

// remove deletes rel, a link itself rather than its target; a missing
// rel is not an error, a link on the way to it is.
func (t *treeRoot) remove(rel string) error {
	if err := t.checkRel(rel); err != nil {
		return err
	}
	err := t.checkDir(path.Dir(rel))
	if err == nil {
		err = t.r.Remove(filepath.FromSlash(rel))
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return t.pathErr("remove", rel, err)
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
	t, err := openTreeRoot(root)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(root, filepath.FromSlash(rel)), err)
	}
	defer func() { _ = t.Close() }()
	return t.writeFile(rel, data)
}

// prepareProviderDir creates a provider's directory dir of a filesystem
// mirror at root without following a link, and removes the temporary
// files an interrupted run left in it (the caller holds the lock of the
// tree behind the mirror).
func prepareProviderDir(root, dir string) error {
	t, err := openTreeRoot(root)
	if err != nil {
		return err
	}
	defer func() { _ = t.Close() }()
	if err := t.mkdirAll(dir); err != nil {
		return err
	}
	return removeTemps(t, dir)
}

// preparePackageDir creates the directories above the package directory
// pkg without following a link, and refuses a link at pkg itself, which
// would otherwise be read through before it is replaced.
func preparePackageDir(t *treeRoot, pkg string) error {
	if err := t.mkdirAll(path.Dir(pkg)); err != nil {
		return err
	}
	info, err := t.lstat(pkg)
	if err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return t.notDir(pkg, info.Mode())
	}
	return nil
}

// sameContentIn reports whether the local file src and rel beneath t are
// the same regular file or hold the same bytes.
func sameContentIn(src string, t *treeRoot, rel string) bool {
	is, err := os.Lstat(src)
	if err != nil || !is.Mode().IsRegular() {
		return false
	}
	ir, err := t.statFile(rel)
	if err != nil {
		return false
	}
	if os.SameFile(is, ir) {
		return true
	}
	if is.Size() != ir.Size() {
		return false
	}
	sa, _, errA := hashing.HashFile(src) // refuses a link or a device
	sb, errB := hashIn(t, rel)
	return errA == nil && errB == nil && sa == sb
}

// hashIn is the SHA-256 of the regular file rel beneath t.
func hashIn(t *treeRoot, rel string) ([sha256.Size]byte, error) {
	f, err := t.openFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	defer func() { _ = f.Close() }()
	w := hashing.NewWriter()
	if _, err := io.Copy(w, f); err != nil {
		return [sha256.Size]byte{}, err
	}
	return w.Sum(), nil
}

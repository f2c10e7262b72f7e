//go:build !unix

package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// oOpenSafe adds nothing where the system has no O_NOFOLLOW: os.Root
// still keeps every open beneath its directory.
const oOpenSafe = 0

// openAt opens rel beneath t (its directory d was checked by the caller)
// and refuses what is not a regular file.
func openAt(t *Root, _ *os.File, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := t.r.OpenFile(filepath.FromSlash(rel), flag, perm)
	if err != nil {
		return nil, t.pathErr("open", rel, err)
	}
	if err := t.checkOpened(f, rel); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// walkDir opens the directory dir beneath t after checking that no link is
// on its path (os.Root keeps it beneath t in any case).
func walkDir(t *Root, dir string) (*os.File, error) {
	if err := t.CheckDir(dir); err != nil {
		return nil, err
	}
	d, err := t.r.Open(filepath.FromSlash(dir))
	if err != nil {
		return nil, t.pathErr("open", dir, err)
	}
	return d, nil
}

// lstatAt describes rel beneath t, a link included.
func lstatAt(t *Root, _ *os.File, rel string) (fs.FileInfo, error) {
	return t.Lstat(rel)
}

// linkAt hard-links the local file src as rel beneath t.
func linkAt(t *Root, _ *os.File, src, rel string) error {
	return os.Link(src, t.Path(rel))
}

// renameAt moves the local file src to rel beneath t.
func renameAt(t *Root, _ *os.File, src, rel string) error {
	return os.Rename(src, t.Path(rel))
}

// checkOpened refuses a file that turned out not to be a regular one (it
// was swapped in between the check and the open).
func (t *Root) checkOpened(f *os.File, rel string) error {
	info, err := f.Stat()
	if err != nil {
		return t.pathErr("stat", rel, err)
	}
	if !info.Mode().IsRegular() {
		return t.notRegular(rel, info.Mode())
	}
	return nil
}

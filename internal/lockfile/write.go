package lockfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// newFileMode is the mode of a lock file that did not exist before, the
// one OpenTofu asks for when it creates .terraform.lock.hcl.
const newFileMode fs.FileMode = 0o644

// tempSuffix follows the lock file's name in the name of the temporary file
// of a write. It deliberately does not use the mirror's ".tmp-" prefix,
// which the mirror's cleanup deletes.
const tempSuffix = ".tfmirror-*"

// renameFile is os.Rename; tests replace it to make the last step fail.
var renameFile = os.Rename

// writeFileAtomic replaces the lock file at path with data. Readers see the
// old file or the new one, never a mix. An existing file keeps its
// permission bits; a new one gets newFileMode whatever the umask. A
// symbolic link or anything else that is not a regular file at path is an
// error, left as it is. The directory must exist. The temporary file is
// removed on any failure.
func writeFileAtomic(path string, data []byte) error {
	mode, err := targetMode(path)
	if err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if !strings.HasPrefix(base, ".") {
		base = "." + base
	}
	f, err := os.CreateTemp(dir, base+tempSuffix)
	if err != nil {
		return fmt.Errorf("write lock file %s: %w", path, err)
	}
	tmp := f.Name()
	if err := fillTemp(f, data, mode); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write lock file %s: %w", path, err)
	}
	if err := renameFile(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write lock file %s: %w", path, err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("write lock file %s: %w", path, err)
	}
	return nil
}

// targetMode returns the permission bits the written file must have: those
// of the regular file at path, or newFileMode when there is none. It uses
// Lstat so that it neither follows a symbolic link nor opens a FIFO or a
// device.
func targetMode(path string) (fs.FileMode, error) {
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return newFileMode, nil
	case err != nil:
		return 0, fmt.Errorf("write lock file %s: %w", path, err)
	case info.Mode()&fs.ModeSymlink != 0:
		return 0, fmt.Errorf("write lock file %s: it is a symbolic link; "+
			"replace it with a regular file, or write the file it points to, and try again", path)
	case !info.Mode().IsRegular():
		return 0, fmt.Errorf("write lock file %s: it exists but is not a regular file (%s)",
			path, "a "+atomicfile.TypeName(info.Mode()))
	}
	return info.Mode().Perm(), nil
}

// fillTemp writes data to the new temporary file f, flushes it to stable
// storage, gives it mode and closes it, closing it on failure too.
func fillTemp(f *os.File, data []byte, mode fs.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// File and directory modes of everything the tree publishes: web content
// must be readable by a web server running as another user.
const (
	FileMode fs.FileMode = 0o644
	DirMode  fs.FileMode = 0o755
)

// TempPrefix starts the name of every temporary file of an atomic write
// (then the target's name, "-" and a random suffix): a name no operator
// gives a file by chance, so the cleanup of an interrupted write removes
// only what tfmirror wrote.
const TempPrefix = ".tfmirror-tmp-"

// isTempName reports whether name is a temporary file of tfmirror's atomic
// writes: its own prefix, or the one earlier releases used (".tmp-", then
// the target's name and a random number or "-link"), so that leftovers of
// an older tfmirror are still removed. Only the directories the caller
// names are searched for them (see RemoveTemps).
func isTempName(name string) bool {
	return strings.HasPrefix(name, TempPrefix) || isLegacyTempName(name)
}

// isLegacyTempName matches the temporary names of earlier releases
// exactly: ".tmp-<name>-<digits>" (os.CreateTemp) or ".tmp-<name>-link".
func isLegacyTempName(name string) bool {
	rest, ok := strings.CutPrefix(name, ".tmp-")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(rest, '-')
	if i <= 0 {
		return false
	}
	suffix := rest[i+1:]
	if suffix == "link" {
		return true
	}
	return suffix != "" && strings.Trim(suffix, "0123456789") == ""
}

// WriteFile atomically replaces path with data: it writes a temporary file
// in the same directory, syncs it, makes it world-readable, renames it into
// place and syncs the directory. Readers see the old file or the new one,
// never a mix. The directories above path are the caller's (created if
// missing); something other than a regular file at path, a link
// included, is an error, never written through. WriteFileIn also refuses
// links in the directories below a root.
func WriteFile(path string, data []byte) error {
	return inDir(path, func(t *Root, name string) error { return t.WriteFile(name, data) })
}

// inDir creates path's directory if missing, opens it as a root and calls
// write with the file's name in it.
func inDir(path string, write func(t *Root, name string) error) error {
	dir := filepath.Dir(path)
	if err := MkdirAll(dir); err != nil {
		return err
	}
	t, err := OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() { _ = t.Close() }()
	return write(t, filepath.Base(path))
}

// CreateFile creates path holding data, complete or not at all, and never
// replaces a file that is there: it writes a temporary file next to it,
// syncs it, and links it into place. A file already at path (another
// process made it first) is an error wrapping fs.ErrExist, and is left as
// it was.
func CreateFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }()
	if err := writeAndSync(f, data); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

func writeAndSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	return SyncClose(f)
}

// writeAndSyncPrivate writes data to f, flushes and closes it, leaving
// it readable by its owner only (as CreateNew made it).
func writeAndSyncPrivate(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil && !isUnsupportedSync(err) {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// WritePrivateFile is WriteFile for a secret (a private key): the file is
// readable and writable by its owner only, from the moment it exists.
func WritePrivateFile(path string, data []byte) error {
	return inDir(path, func(t *Root, name string) error { return t.WritePrivate(name, data) })
}

// SyncClose makes f world-readable, flushes it to stable storage and closes it.
func SyncClose(f *os.File) error {
	if err := f.Chmod(FileMode); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Rename moves a synced file into place and syncs the target directory so
// the rename itself survives a crash.
func Rename(from, to string) error {
	if err := MkdirAll(filepath.Dir(to)); err != nil {
		return err
	}
	if err := os.Rename(from, to); err != nil {
		_ = os.Remove(from)
		return fmt.Errorf("publish %s: %w", to, err)
	}
	return SyncDir(filepath.Dir(to))
}

// SyncDir flushes dir so that a rename in it survives a crash. Where a
// directory cannot be synced (Windows, filesystems that refuse to) there is
// nothing more to make durable, and it returns nil.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !isUnsupportedSync(err) {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// isUnsupportedSync reports errors some filesystems return for fsync on a
// directory, where there is nothing more to make durable.
func isUnsupportedSync(err error) bool {
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, syscall.EINVAL) ||
		strings.Contains(err.Error(), "invalid argument") || strings.Contains(err.Error(), "not supported")
}

// MkdirAll creates dir and its missing parents with DirMode, whatever the
// process umask, so a web server can traverse them.
func MkdirAll(dir string) error {
	info, err := os.Stat(dir)
	if err == nil {
		if !info.IsDir() {
			return fmt.Errorf("create directory %s: a file is in the way", dir)
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, DirMode); err != nil && !os.IsExist(err) {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	if err := os.Chmod(dir, DirMode); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	return nil
}

// RemoveTemps removes the temporary files of interrupted atomic writes in
// dir (regular files with a temporary name; see isTempName). The caller
// holds whatever lock keeps a live writer out of dir, and names only
// directories it writes: an operator's files elsewhere are never
// searched. A missing dir is not an error.
func (t *Root) RemoveTemps(dir string) error {
	entries, err := t.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("find leftovers: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTempName(e.Name()) {
			continue
		}
		if err := t.Remove(path.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("remove leftover: %w", err)
		}
	}
	return nil
}

// randomSuffix is a random name part for a new file.
func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

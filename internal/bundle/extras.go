package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfmirror/tfmirror/layout"
)

// extraFiles are the bundle's files outside the mirror: lock-files/ and
// cli-config/.
func extraFiles(m Manifest) []File {
	var out []File
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Path, MirrorDir+"/") {
			out = append(out, f)
		}
	}
	return out
}

// checkExtras makes sure writeExtras can write every extra into dir
// without following a link or replacing what is not a regular file, before
// anything is published.
func checkExtras(s *staged, dir string) error {
	for _, f := range extraFiles(s.manifest) {
		if _, err := extraTarget(dir, f.Path, false); err != nil {
			return err
		}
	}
	return nil
}

// writeExtras copies the bundle's lock-files/ and cli-config/ into dir,
// each file atomically with mode 0644 (they hold nothing secret, and
// import checked every lock file parses as one).
func writeExtras(s *staged, dir string, report *ImportReport) error {
	if err := layout.MkdirAll(dir); err != nil {
		return err
	}
	for _, f := range extraFiles(s.manifest) {
		data, err := readLimited(s.path(f.Path), maxExtraBytes)
		if err != nil {
			return fmt.Errorf("extra %s: %w", f.Path, err)
		}
		target, err := extraTarget(dir, f.Path, true)
		if err != nil {
			return err
		}
		if err := writeExtra(target, data); err != nil {
			return fmt.Errorf("extra %s: %w", f.Path, err)
		}
		report.Extras++
	}
	return nil
}

// extraTarget returns where the bundle file name goes under dir. No
// directory below dir on the way may be a symbolic link (or anything but
// a directory), and the target must be a regular file or absent; with
// create, missing directories are made.
func extraTarget(dir, name string, create bool) (string, error) {
	elems := strings.Split(name, "/")
	p := dir
	for _, elem := range elems[:len(elems)-1] {
		p = filepath.Join(p, elem)
		if err := extraDir(p, create); err != nil {
			return "", fmt.Errorf("extra %s: %w", name, err)
		}
	}
	target := filepath.Join(p, elems[len(elems)-1])
	info, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return target, nil
	case err != nil:
		return "", fmt.Errorf("extra %s: %w", name, err)
	case !info.Mode().IsRegular():
		return "", fmt.Errorf("extra %s: %s is a %s: not replaced", name, target, layout.TypeName(info.Mode()))
	}
	return target, nil
}

// extraDir checks that p is a directory, not a link to one, creating it
// if it is missing and create is set.
func extraDir(p string, create bool) error {
	info, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		if err := os.Mkdir(p, layout.DirMode); err != nil {
			return fmt.Errorf("create directory %s: %w", p, err)
		}
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !info.IsDir():
		return fmt.Errorf("%s is a %s, not a directory: not followed", p, layout.TypeName(info.Mode()))
	}
	return nil
}

// writeExtra replaces target atomically: a temporary file in its
// directory, renamed over it (a rename replaces a link, never follows it).
func writeExtra(target string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(target), ".tmp-"+filepath.Base(target)+"-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return err
	}
	if err := layout.SyncClose(f); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), target); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return layout.SyncDir(filepath.Dir(target))
}

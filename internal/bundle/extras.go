package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
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
// anything is published. (writeExtras refuses them again as it writes.)
func checkExtras(s *staged, dir string) error {
	for _, f := range extraFiles(s.manifest) {
		if err := checkExtra(dir, f.Path); err != nil {
			return err
		}
	}
	return nil
}

// writeExtras copies the bundle's lock-files/ and cli-config/ into dir,
// each file atomically with mode 0644 (they hold nothing secret, and
// import checked every lock file parses as one), never through a link
// below dir (atomicfile.WriteFileIn).
func writeExtras(s *staged, dir string, report *ImportReport) error {
	for _, f := range extraFiles(s.manifest) {
		data, err := readLimited(s.path(f.Path), maxExtraBytes)
		if err != nil {
			return fmt.Errorf("extra %s: %w", f.Path, err)
		}
		if err := atomicfile.WriteFileIn(dir, f.Path, data); err != nil {
			return fmt.Errorf("extra %s: %w", f.Path, err)
		}
		report.Extras++
		if strings.HasPrefix(f.Path, LockFilesDir+"/") {
			report.ExtraLockFiles++
		}
	}
	return nil
}

// checkExtra checks where the bundle file name goes under dir: no
// directory below dir on the way may be a symbolic link (or anything but
// a directory), and the target must be a regular file or absent.
func checkExtra(dir, name string) error {
	elems := strings.Split(name, "/")
	p := dir
	for _, elem := range elems[:len(elems)-1] {
		p = filepath.Join(p, elem)
		info, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // created when written
		case err != nil:
			return fmt.Errorf("extra %s: %w", name, err)
		case !info.IsDir():
			return fmt.Errorf("extra %s: %s is a %s, not a directory: not followed", name, p, atomicfile.TypeName(info.Mode()))
		}
	}
	target := filepath.Join(p, elems[len(elems)-1])
	info, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("extra %s: %w", name, err)
	case !info.Mode().IsRegular():
		return fmt.Errorf("extra %s: %s is a %s: not replaced", name, target, atomicfile.TypeName(info.Mode()))
	}
	return nil
}

package modfetch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/excerpt"

	"github.com/tfmirror/tfmirror/hashing"
)

// checkTree walks the package root without following links and refuses a
// link that does not resolve inside it (through any chain of links; one
// that dangles inside it is left to the packer), anything but files,
// directories and links, and a package beyond limits.
func checkTree(dst string, limits hashing.ModuleLimits) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	var entries int
	var size int64
	return fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		entries++
		if entries > limits.MaxFiles {
			return fmt.Errorf("package has more than the limit of %d entries", limits.MaxFiles)
		}
		switch typ := d.Type(); {
		case typ&fs.ModeSymlink != 0:
			return checkLink(root, name)
		case typ.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if size += info.Size(); size > limits.MaxBytes {
				return fmt.Errorf("package exceeds the limit of %d unpacked bytes", limits.MaxBytes)
			}
		case !typ.IsDir():
			return fmt.Errorf("%s is a %s", name, atomicfile.TypeName(typ))
		}
		return nil
	})
}

// checkLink refuses a link that leaves the root, directly or through other
// links (os.Root follows them and refuses an escape).
func checkLink(root *os.Root, name string) error {
	_, err := root.Stat(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("symbolic link %s does not resolve inside the package: %w", name, err)
}

// resolveSubdir finds the directory a subdirectory pattern names, each
// glob component matching exactly one directory; every component must be
// a real directory, not a link.
func resolveSubdir(dst, pattern string) (string, error) {
	if pattern == "" {
		return "", nil
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }()
	found := "."
	for _, part := range strings.Split(pattern, "/") {
		next := path.Join(found, part)
		if strings.ContainsAny(part, "*?[") {
			if next, err = matchOne(root, found, part); err != nil {
				return "", fmt.Errorf("subdirectory %s: %w", excerpt.Quote(pattern), err)
			}
		}
		info, err := root.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("subdirectory %s is not in the package: %w", excerpt.Quote(pattern), err)
		}
		if !info.IsDir() {
			return "", fmt.Errorf("subdirectory %s: %s is a %s, not a directory", excerpt.Quote(pattern), excerpt.Text(next, 0), atomicfile.TypeName(info.Mode()))
		}
		found = next
	}
	return found, nil
}

// matchOne returns the one directory in dir whose name matches pattern.
func matchOne(root *os.Root, dir, pattern string) (string, error) {
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return "", err
	}
	var matches []string
	for _, e := range entries {
		if ok, _ := path.Match(pattern, e.Name()); ok && e.IsDir() {
			matches = append(matches, path.Join(dir, e.Name()))
		}
	}
	if len(matches) != 1 {
		where := dir
		if dir == "." {
			where = "the package root"
		}
		return "", fmt.Errorf("%s matches %d directories in %s, not one", excerpt.Quote(pattern), len(matches), where)
	}
	return matches[0], nil
}

//go:build unix

package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// oOpenSafe makes opening a local file refuse a symbolic link and not
// wait for the other end of a named pipe.
const oOpenSafe = unix.O_NOFOLLOW | unix.O_NONBLOCK

// openAt opens rel, whose directory d has been opened through t, with
// O_NOFOLLOW: a link at rel is refused, never followed, even one swapped
// in after the caller's checks. O_NONBLOCK keeps a named pipe from
// blocking the open; what was opened must be a regular file.
func openAt(t *Root, d *os.File, rel string, flag int, perm fs.FileMode) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Openat(int(d.Fd()), path.Base(rel), flag|oOpenSafe|unix.O_CLOEXEC, uint32(perm.Perm()))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
		return nil, t.notRegular(rel, fs.ModeSymlink)
	}
	if err != nil {
		return nil, t.pathErr("open", rel, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, t.pathErr("stat", rel, err)
	}
	if mode := uint32(st.Mode); mode&unix.S_IFMT != unix.S_IFREG { // uint16 on some systems
		_ = unix.Close(fd)
		return nil, t.notRegular(rel, unixType(mode))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		_ = unix.Close(fd)
		return nil, t.pathErr("open", rel, err)
	}
	return os.NewFile(uintptr(fd), t.Path(rel)), nil
}

// walkDir opens the directory dir beneath t one name at a time, each with
// O_NOFOLLOW and O_DIRECTORY: a link anywhere on the path is refused,
// never followed, even one swapped in while it walks; a missing directory
// is an error wrapping fs.ErrNotExist.
func walkDir(t *Root, dir string) (*os.File, error) {
	cur, err := t.r.Open(".")
	if err != nil || dir == "." {
		return cur, err
	}
	parts := strings.Split(dir, "/")
	for i, name := range parts {
		var fd int
		for {
			fd, err = unix.Openat(int(cur.Fd()), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		sub := path.Join(parts[:i+1]...)
		if err != nil {
			err = t.walkErr(cur, name, sub, err)
			_ = cur.Close()
			return nil, err
		}
		_ = cur.Close()
		cur = os.NewFile(uintptr(fd), t.Path(sub))
	}
	return cur, nil
}

// lstatAt describes rel, in its directory d opened through t, a link
// included, with one fstatat.
func lstatAt(t *Root, d *os.File, rel string) (fs.FileInfo, error) {
	var st unix.Stat_t
	var err error
	for {
		err = unix.Fstatat(int(d.Fd()), path.Base(rel), &st, unix.AT_SYMLINK_NOFOLLOW)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, t.pathErr("lstat", rel, err)
	}
	return statInfo{name: path.Base(rel), st: st}, nil
}

// statInfo is an fs.FileInfo of a stat.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s statInfo) Name() string { return s.name }
func (s statInfo) Size() int64  { return s.st.Size }
func (s statInfo) Mode() fs.FileMode {
	return unixType(uint32(s.st.Mode)) | fs.FileMode(s.st.Mode&0o777) //nolint:unconvert // uint16 on some systems
}
func (s statInfo) ModTime() time.Time {
	sec, nsec := s.st.Mtim.Unix()
	return time.Unix(sec, nsec)
}
func (s statInfo) IsDir() bool { return s.Mode().IsDir() }
func (s statInfo) Sys() any    { return &s.st }

// walkErr is the error for a name walkDir could not open as a directory
// in parent: what is there instead, if anything.
func (t *Root) walkErr(parent *os.File, name, sub string, err error) error {
	if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
		return t.pathErr("open", sub, err)
	}
	var st unix.Stat_t
	if unix.Fstatat(int(parent.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return t.pathErr("open", sub, err)
	}
	return t.notDir(sub, unixType(uint32(st.Mode))) //nolint:unconvert // uint16 on some systems
}

// unixType is the fs.FileMode type of a stat mode.
func unixType(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

// linkAt hard-links the local file src as rel in d. A link at src is
// linked as itself, never followed (the caller checks the result).
func linkAt(_ *Root, d *os.File, src, rel string) error {
	return unix.Linkat(unix.AT_FDCWD, src, int(d.Fd()), path.Base(rel), 0)
}

// renameAt moves the local file src to rel in d.
func renameAt(_ *Root, d *os.File, src, rel string) error {
	return unix.Renameat(unix.AT_FDCWD, src, int(d.Fd()), path.Base(rel))
}

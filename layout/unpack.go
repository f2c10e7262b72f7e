package layout

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// ErrUnsafeArchive marks a package archive InstallPackageDir refuses to
// unpack: an entry name that would leave the package directory or is not
// canonical, a duplicate or clashing entry, a symbolic link or other special
// file, or more entries or bytes than the limits allow.
var ErrUnsafeArchive = errors.New("refused as unsafe")

// exchangeFunc atomically swaps the directory entries from and to, both of
// which exist. It fails with an error atomicfile.IsExchangeUnsupported
// recognizes (syscall.EINVAL, syscall.ENOSYS or errors.ErrUnsupported)
// where the system cannot do it; InstallPackageDir then falls back to two
// renames. Tests replace it.
var exchangeFunc = atomicfile.RenameExchange

// Names inside the per-install job directory under workDir.
const (
	installNewName = "new" // the extracted package; after an exchange, the old one
	installOldName = "old" // the old package, moved aside by the fallback
)

// InstallPackageDir unpacks the provider package zipPath into the directory
// final (an unpacked filesystem-mirror package directory such as
// OUT/<host>/<namespace>/<type>/<version>/<os_arch>), replacing whatever
// final held. workDir is a private directory on the same filesystem as
// final and outside the tree clients read (such as OUT/.tfmirror/staging);
// it is created if missing.
//
// Guarantees:
//
//  1. final appears complete or not at all. The zip is extracted into a new
//     job directory created under workDir; every file written and every
//     directory created is fsynced; then the package is published with one
//     atomic operation: rename(2) onto final if final does not exist, or,
//     if it does (an old or damaged package, even a plain file), a Linux
//     renameat2(RENAME_EXCHANGE) that swaps the two, after which the old
//     content, now inside workDir, is removed. Where the exchange is not
//     supported (EINVAL, ENOSYS, or a system other than Linux) the old
//     package is first renamed into workDir, then the new one is renamed to
//     final: in that fallback a reader can briefly find no package at all,
//     but never a partial or mixed one. If the second rename fails, the old
//     package is put back.
//  2. After the rename the parent directory of final is fsynced, as are the
//     parents of any directories created on the way to it, so a nil return
//     means the new package is durable.
//  3. Nothing named like a temporary ever appears in the client-visible
//     tree: every intermediate name lives inside workDir. A SIGKILL or
//     power loss at any point leaves at final the old package, the new one
//     or (fallback only) none, plus garbage only inside workDir, which the
//     caller deletes on its next run. On return, error or not, the job
//     directory has been removed (a failure to remove it is not reported:
//     the caller's next-run cleanup takes care of it).
//  4. Extraction is safe. It refuses, before writing anything, entries whose
//     name is empty, absolute, contains a backslash or NUL, is not local
//     (filepath.IsLocal) or is not canonical ("a/./b", "a/../b", "a//b");
//     duplicate names ("a" and "a/" count as the same); a file that is also
//     the parent of another entry ("a" and "a/b", in either order);
//     symbolic links and anything else that is neither a regular file nor a
//     directory; directory entries with content; and archives over limits.
//     A zero field of limits means the one of hashing.DefaultZipLimits.
//     Entry counts and declared sizes are checked first; while writing,
//     each entry is read through an io.LimitReader bounded by the bytes
//     left, so a lying size stops at the cap. Files are created with
//     O_EXCL (and O_NOFOLLOW where the system has it), with mode 0755 if the
//     entry has any executable bit and 0644 otherwise; directories are 0755,
//     whatever the umask.
//  5. Errors wrap their cause with %w and say what was being done:
//     "unpack ZIP: entry NAME: ..." for extraction, "install FINAL: ..." for
//     publication. Refused archives match ErrUnsafeArchive.
func InstallPackageDir(workDir, zipPath, final string, limits hashing.ZipLimits) error {
	job, err := stagePackageDir(workDir, zipPath, limits)
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(job) }()
	return publishPackageDir(job, final)
}

// stagePackageDir extracts zipPath into job/new, for a new job directory
// under workDir, and makes it durable. It returns the job directory; on
// error it has removed it. Nothing outside workDir changes.
func stagePackageDir(workDir, zipPath string, limits hashing.ZipLimits) (job string, err error) {
	if err := atomicfile.MkdirAll(workDir); err != nil {
		return "", fmt.Errorf("unpack %s: %w", zipPath, err)
	}
	job, err = os.MkdirTemp(workDir, "install-*")
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", zipPath, err)
	}
	if err := extractPackage(zipPath, filepath.Join(job, installNewName), limits); err != nil {
		_ = os.RemoveAll(job)
		return "", err
	}
	if err := atomicfile.SyncDir(job); err != nil {
		_ = os.RemoveAll(job)
		return "", fmt.Errorf("unpack %s: %w", zipPath, err)
	}
	return job, nil
}

// publishPackageDir moves job/new to final with one atomic operation (or
// the two-rename fallback) and syncs final's parent. Old content ends up
// inside job.
func publishPackageDir(job, final string) error {
	staged := filepath.Join(job, installNewName)
	parent := filepath.Dir(final)
	if err := mkdirAllSynced(parent); err != nil {
		return fmt.Errorf("install %s: %w", final, err)
	}
	_, err := os.Lstat(final)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Rename(staged, final); err != nil {
			return fmt.Errorf("install %s: %w", final, err)
		}
	case err != nil:
		return fmt.Errorf("install %s: %w", final, err)
	default:
		err := exchangeFunc(staged, final)
		if err != nil && !atomicfile.IsExchangeUnsupported(err) {
			return fmt.Errorf("install %s: exchange with the old package: %w", final, err)
		}
		if err != nil {
			if err := moveAside(final, job); err != nil {
				return err
			}
			if err := os.Rename(staged, final); err != nil {
				err = fmt.Errorf("install %s: %w", final, err)
				if rerr := os.Rename(filepath.Join(job, installOldName), final); rerr != nil {
					err = errors.Join(err, fmt.Errorf("install %s: put the old package back: %w", final, rerr))
				}
				return err
			}
		}
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return fmt.Errorf("install %s: %w", final, err)
	}
	return nil
}

// moveAside renames final to job/old, out of the client-visible tree: the
// first step of the fallback when the exchange is not supported.
func moveAside(final, job string) error {
	if err := os.Rename(final, filepath.Join(job, installOldName)); err != nil {
		return fmt.Errorf("install %s: move the old package aside: %w", final, err)
	}
	return nil
}

// mkdirAllSynced is MkdirAll that also fsyncs the parent of every directory
// it creates, so the path to final survives a crash once final's parent is
// synced.
func mkdirAllSynced(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err == nil {
			if !info.IsDir() {
				return fmt.Errorf("create directory %s: %s is not a directory", dir, d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, atomicfile.DirMode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create directory %s: %w", d, err)
		}
		if err := os.Chmod(d, atomicfile.DirMode); err != nil {
			return fmt.Errorf("create directory %s: %w", d, err)
		}
		if err := atomicfile.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

// packageEntry is one zip entry checked and ready to extract.
type packageEntry struct {
	f    *zip.File
	name string // canonical slash-separated path, no trailing slash
	dir  bool
	mode fs.FileMode
}

// extractPackage unpacks zipPath into dest, which must not exist, and
// fsyncs every file and directory it creates.
func extractPackage(zipPath, dest string, limits hashing.ZipLimits) error {
	limits = limits.WithDefaults()
	zr, err := zip.OpenReader(zipPath)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // insecure names get a precise error below
		return fmt.Errorf("unpack %s: %w", zipPath, err)
	}
	defer func() { _ = zr.Close() }()
	entries, err := checkPackageEntries(zr.File, limits)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", zipPath, err)
	}

	dirs := []string{dest} // every directory created, parents first
	if err := mkdirFresh(dest); err != nil {
		return fmt.Errorf("unpack %s: %w", zipPath, err)
	}
	made := map[string]bool{".": true}
	mkdirs := func(name string) error {
		if made[name] {
			return nil
		}
		var todo []string
		for d := name; !made[d]; d = path.Dir(d) {
			todo = append(todo, d)
		}
		for i := len(todo) - 1; i >= 0; i-- {
			p := filepath.Join(dest, filepath.FromSlash(todo[i]))
			if err := mkdirFresh(p); err != nil {
				return err
			}
			made[todo[i]] = true
			dirs = append(dirs, p)
		}
		return nil
	}

	left := limits.MaxUnpackedBytes
	for _, e := range entries {
		if e.dir {
			if err := mkdirs(e.name); err != nil {
				return fmt.Errorf("unpack %s: entry %q: %w", zipPath, e.f.Name, err)
			}
			continue
		}
		if err := mkdirs(path.Dir(e.name)); err != nil {
			return fmt.Errorf("unpack %s: entry %q: %w", zipPath, e.f.Name, err)
		}
		n, err := writePackageFile(e, filepath.Join(dest, filepath.FromSlash(e.name)), left, limits.MaxUnpackedBytes)
		if err != nil {
			return fmt.Errorf("unpack %s: entry %q: %w", zipPath, e.f.Name, err)
		}
		left -= n
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := atomicfile.SyncDir(dirs[i]); err != nil {
			return fmt.Errorf("unpack %s: %w", zipPath, err)
		}
	}
	return nil
}

// mkdirFresh creates dir, which must not exist, with mode
// atomicfile.DirMode whatever the umask.
func mkdirFresh(dir string) error {
	if err := os.Mkdir(dir, atomicfile.DirMode); err != nil {
		return err
	}
	return os.Chmod(dir, atomicfile.DirMode)
}

// writePackageFile writes entry e to the new file p, reading at most left+1
// bytes, and fsyncs it. It returns the bytes written.
func writePackageFile(e packageEntry, p string, left, limit int64) (int64, error) {
	r, err := e.f.Open()
	if err != nil {
		return 0, err
	}
	defer func() { _ = r.Close() }()
	out, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, e.mode)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(r, left+1))
	if err == nil && n > left {
		err = fmt.Errorf("archive unpacks to more than the limit of %d bytes: %w", limit, ErrUnsafeArchive)
	}
	if err == nil {
		err = out.Chmod(e.mode)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// checkPackageEntries validates every entry of the archive before anything
// is written: entry count, then hashing.CheckUnpackable (names, types,
// duplicates, file/directory clashes: the rule HashArchive applied before
// the archive was published), then declared sizes.
func checkPackageEntries(files []*zip.File, limits hashing.ZipLimits) ([]packageEntry, error) {
	if len(files) > limits.MaxEntries {
		return nil, fmt.Errorf("entry %q: archive has more than the limit of %d entries: %w", files[limits.MaxEntries].Name, limits.MaxEntries, ErrUnsafeArchive)
	}
	checked, err := hashing.CheckUnpackable(files)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrUnsafeArchive)
	}
	var declared uint64
	maxBytes := uint64(limits.MaxUnpackedBytes)
	entries := make([]packageEntry, 0, len(files))
	for i, f := range files {
		e := checked[i]
		if !e.Dir {
			if f.UncompressedSize64 > maxBytes-declared {
				return nil, fmt.Errorf("entry %q: archive unpacks to more than the limit of %d bytes: %w", f.Name, limits.MaxUnpackedBytes, ErrUnsafeArchive)
			}
			declared += f.UncompressedSize64
		}
		fileMode := atomicfile.FileMode
		if f.Mode()&0o111 != 0 {
			fileMode = 0o755
		}
		entries = append(entries, packageEntry{f: f, name: e.Name, dir: e.Dir, mode: fileMode})
	}
	return entries, nil
}

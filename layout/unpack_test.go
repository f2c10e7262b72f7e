package layout

import (
	"archive/zip"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// testZipEntry is one entry of a zip built by writeTestPackageZip.
type testZipEntry struct {
	name string
	body string
	mode fs.FileMode // 0 means 0644 for a file, 0755 for a name ending in "/"
	// declared, if non-negative, is written as the uncompressed size of a
	// stored entry, whatever the length of body (a lying header).
	declared int64
}

func zfile(name, body string, mode fs.FileMode) testZipEntry {
	return testZipEntry{name: name, body: body, mode: mode, declared: -1}
}

// writeTestPackageZip writes a zip of entries, in order, outside any tree
// under test and returns its path.
func writeTestPackageZip(t *testing.T, entries ...testZipEntry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pkg.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		if e.declared >= 0 {
			hdr := &zip.FileHeader{Name: e.name, Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte(e.body)),
				CompressedSize64: uint64(len(e.body)), UncompressedSize64: uint64(e.declared)}
			w, err := zw.CreateRaw(hdr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		hdr := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
			if strings.HasSuffix(e.name, "/") {
				mode = fs.ModeDir | 0o755
			}
		}
		hdr.SetMode(mode)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			t.Fatal(err)
		}
		if e.body != "" {
			if _, err := w.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// installLayout returns a client tree root, its private work directory and
// a package directory inside the tree.
func installLayout(t *testing.T) (root, workDir, final string) {
	t.Helper()
	root = t.TempDir()
	workDir = filepath.Join(root, filepath.FromSlash(StagingDirName))
	final = filepath.Join(root, "registry.opentofu.org", "hashicorp", "null", "3.2.1", "linux_amd64")
	return root, workDir, final
}

// clientView describes everything a client of the tree at root can see:
// every path except tfmirror's private directory, with its type, mode and
// content.
func clientView(t *testing.T, root string) map[string]string {
	t.Helper()
	view := make(map[string]string)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == PrivateDirName {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		perm := ""
		if unixModes {
			perm = fmt.Sprintf(" %04o", info.Mode().Perm())
		}
		switch {
		case d.IsDir():
			view[rel] = "dir" + perm
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			view[rel] = "file" + perm + " " + string(data)
		default:
			view[rel] = "other " + info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view
}

// wantWorkDirEmpty fails unless workDir holds nothing (or does not exist).
func wantWorkDirEmpty(t *testing.T, workDir string) {
	t.Helper()
	entries, err := os.ReadDir(workDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("work directory %s still holds %v", workDir, names)
	}
}

func diffViews(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if w, ok := want[k]; !ok {
			t.Errorf("%s: unexpected %s: %q", what, k, got[k])
		} else if w != got[k] {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], w)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[k]; !ok {
			t.Errorf("%s: missing %s: %q", what, k, want[k])
		}
	}
}

// newPackage is the package the tests install, and what a client must see
// once it is installed (tfmirror's private directory aside).
func newPackage(t *testing.T) (zipPath string, want map[string]string) {
	t.Helper()
	zipPath = writeTestPackageZip(t,
		zfile("terraform-provider-null_v3.2.1_x5", "new binary", 0o755),
		zfile("LICENSE", "new license", 0o600),
		zfile("docs/", "", 0),
		zfile("docs/index.md", "docs", 0o644),
		zfile("nested/deep/tool", "owner-executable", 0o744),
		zfile("empty", "", 0o644),
	)
	d, f, x := "dir", "file", "file"
	if unixModes {
		d, f, x = "dir 0755", "file 0644", "file 0755"
	}
	pkg := "registry.opentofu.org/hashicorp/null/3.2.1/linux_amd64"
	want = map[string]string{
		"registry.opentofu.org":                      d,
		"registry.opentofu.org/hashicorp":            d,
		"registry.opentofu.org/hashicorp/null":       d,
		"registry.opentofu.org/hashicorp/null/3.2.1": d,
		pkg: d,
		pkg + "/terraform-provider-null_v3.2.1_x5": x + " new binary",
		pkg + "/LICENSE":          f + " new license",
		pkg + "/docs":             d,
		pkg + "/docs/index.md":    f + " docs",
		pkg + "/nested":           d,
		pkg + "/nested/deep":      d,
		pkg + "/nested/deep/tool": x + " owner-executable",
		pkg + "/empty":            f + " ",
	}
	return zipPath, want
}

// writeOldPackage fills final with a different package.
func writeOldPackage(t *testing.T, final string) {
	t.Helper()
	for name, body := range map[string]string{
		"terraform-provider-null_v3.2.1_x5": "old binary",
		"old-only.txt":                      "gone after the install",
		"olddir/inner":                      "old inner",
	} {
		p := filepath.Join(final, filepath.FromSlash(name))
		if err := atomicfile.MkdirAll(filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// swapExchange replaces exchangeFunc for the rest of the test.
func swapExchange(t *testing.T, f func(from, to string) error) {
	t.Helper()
	old := exchangeFunc
	exchangeFunc = f
	t.Cleanup(func() { exchangeFunc = old })
}

func TestInstallPackageDirFresh(t *testing.T) {
	setUmask(t, 0o077) // modes must not depend on it
	root, workDir, final := installLayout(t)
	zipPath, want := newPackage(t)
	swapExchange(t, func(from, to string) error {
		t.Errorf("exchange called for a fresh install: %s, %s", from, to)
		return atomicfile.RenameExchange(from, to)
	})
	if err := InstallPackageDir(workDir, zipPath, final, hashing.DefaultZipLimits); err != nil {
		t.Fatal(err)
	}
	diffViews(t, "fresh install", clientView(t, root), want)
	wantWorkDirEmpty(t, workDir)
}

func TestInstallPackageDirReplaces(t *testing.T) {
	fallbacks := map[string]error{
		"fallback EINVAL":      syscall.EINVAL, // unix.EINVAL on Linux
		"fallback ENOSYS":      syscall.ENOSYS,
		"fallback unsupported": errors.ErrUnsupported,
	}
	for _, name := range []string{"exchange", "fallback EINVAL", "fallback ENOSYS", "fallback unsupported"} {
		for _, damaged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s damaged=%v", name, damaged), func(t *testing.T) {
				root, workDir, final := installLayout(t)
				zipPath, want := newPackage(t)
				if damaged { // a plain file where the package directory belongs
					if err := atomicfile.MkdirAll(filepath.Dir(final)); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(final, []byte("damaged"), 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					writeOldPackage(t, final)
				}
				calls := 0
				swapExchange(t, func(from, to string) error {
					calls++
					if name == "exchange" {
						err := atomicfile.RenameExchange(from, to)
						if atomicfile.IsExchangeUnsupported(err) {
							t.Skipf("RENAME_EXCHANGE not supported here: %v", err)
						}
						return err
					}
					return &os.LinkError{Op: "renameat2", Old: from, New: to, Err: fallbacks[name]}
				})
				if err := InstallPackageDir(workDir, zipPath, final, hashing.DefaultZipLimits); err != nil {
					t.Fatal(err)
				}
				if calls != 1 {
					t.Errorf("exchange called %d times, want 1", calls)
				}
				diffViews(t, "after replacing", clientView(t, root), want)
				wantWorkDirEmpty(t, workDir)
			})
		}
	}
}

// TestInstallPackageDirExchangeFailure checks that an exchange error other
// than "unsupported" (here EXDEV) fails without touching final.
func TestInstallPackageDirExchangeFailure(t *testing.T) {
	root, workDir, final := installLayout(t)
	zipPath, _ := newPackage(t)
	writeOldPackage(t, final)
	before := clientView(t, root)
	swapExchange(t, func(from, to string) error {
		return &os.LinkError{Op: "renameat2", Old: from, New: to, Err: syscall.EXDEV}
	})
	err := InstallPackageDir(workDir, zipPath, final, hashing.DefaultZipLimits)
	if !errors.Is(err, syscall.EXDEV) || !strings.Contains(err.Error(), "install "+final) {
		t.Fatalf("got error %v, want a wrapped EXDEV naming %s", err, final)
	}
	diffViews(t, "after a failed exchange", clientView(t, root), before)
	wantWorkDirEmpty(t, workDir)
}

func TestInstallPackageDirRefusesUnsafeArchives(t *testing.T) {
	small := hashing.ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 10}
	tests := []struct {
		name    string
		entries []testZipEntry
		limits  hashing.ZipLimits
		entry   string // the entry the error must name
		why     string
		unsafe  bool // the error must match ErrUnsafeArchive
	}{
		{name: "escape", entries: []testZipEntry{zfile("ok", "x", 0), zfile("../x", "x", 0)}, entry: "../x", why: "leaves the package directory", unsafe: true},
		{name: "deep escape", entries: []testZipEntry{zfile("a/../../x", "x", 0)}, entry: "a/../../x", why: "leaves the package directory", unsafe: true},
		{name: "absolute", entries: []testZipEntry{zfile("/etc/passwd", "x", 0)}, entry: "/etc/passwd", why: "absolute", unsafe: true},
		{name: "backslash", entries: []testZipEntry{zfile(`..\x`, "x", 0)}, entry: `..\x`, why: "backslash", unsafe: true},
		{name: "NUL", entries: []testZipEntry{zfile("a\x00b", "x", 0)}, entry: "a\x00b", why: "NUL", unsafe: true},
		{name: "empty name", entries: []testZipEntry{zfile("", "x", 0)}, entry: "", why: "empty name", unsafe: true},
		{name: "dot component", entries: []testZipEntry{zfile("a/./b", "x", 0)}, entry: "a/./b", why: "not canonical", unsafe: true},
		{name: "dot-dot inside", entries: []testZipEntry{zfile("a/../b", "x", 0)}, entry: "a/../b", why: "not canonical", unsafe: true},
		{name: "double slash", entries: []testZipEntry{zfile("a//b", "x", 0)}, entry: "a//b", why: "not canonical", unsafe: true},
		{name: "duplicate", entries: []testZipEntry{zfile("a", "1", 0), zfile("b", "2", 0), zfile("a", "3", 0)}, entry: "a", why: "duplicate", unsafe: true},
		{name: "directory then file", entries: []testZipEntry{zfile("a/", "", 0), zfile("a", "x", 0)}, entry: "a", why: "duplicate", unsafe: true},
		{name: "file then child", entries: []testZipEntry{zfile("a", "x", 0), zfile("a/b", "y", 0)}, entry: "a/b", why: `parent "a" is a file`, unsafe: true},
		{name: "file then grandchild", entries: []testZipEntry{zfile("a", "x", 0), zfile("a/b/c", "y", 0)}, entry: "a/b/c", why: `parent "a" is a file`, unsafe: true},
		{name: "child then file", entries: []testZipEntry{zfile("a/b", "y", 0), zfile("a", "x", 0)}, entry: "a", why: "also the parent directory", unsafe: true},
		{name: "symlink", entries: []testZipEntry{zfile("link", "/etc/passwd", fs.ModeSymlink|0o777)}, entry: "link", why: "symbolic link", unsafe: true},
		{name: "named pipe", entries: []testZipEntry{zfile("fifo", "", fs.ModeNamedPipe|0o644)}, entry: "fifo", why: "not a regular file", unsafe: true},
		{name: "device", entries: []testZipEntry{zfile("dev", "", fs.ModeDevice|0o644)}, entry: "dev", why: "not a regular file", unsafe: true},
		// A name without the trailing slash lets the writer store data.
		{name: "directory with content", entries: []testZipEntry{zfile("d", "data", fs.ModeDir|0o755)}, entry: "d", why: "directory entry has content", unsafe: true},
		{name: "too many entries", limits: small,
			entries: []testZipEntry{zfile("1", "", 0), zfile("2", "", 0), zfile("3", "", 0), zfile("4", "", 0)},
			entry:   "4", why: "more than the limit of 3 entries", unsafe: true},
		{name: "too many bytes", limits: small,
			entries: []testZipEntry{zfile("a", "123456", 0), zfile("b", "123456", 0)},
			entry:   "b", why: "more than the limit of 10 bytes", unsafe: true},
		{name: "one entry too big", limits: small,
			entries: []testZipEntry{zfile("big", strings.Repeat("x", 11), 0)},
			entry:   "big", why: "more than the limit of 10 bytes", unsafe: true},
		// The header claims 1 byte; reading stops at the lie (archive/zip
		// or the byte cap, whichever comes first).
		{name: "lying size", limits: small,
			entries: []testZipEntry{{name: "liar", body: strings.Repeat("x", 1000), declared: 1}},
			entry:   "liar"},
	}
	for _, tt := range tests {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s existing=%v", tt.name, existing), func(t *testing.T) {
				root, workDir, final := installLayout(t)
				if existing {
					writeOldPackage(t, final)
				}
				before := clientView(t, root)
				zipPath := writeTestPackageZip(t, tt.entries...)
				limits := tt.limits
				if limits == (hashing.ZipLimits{}) {
					limits = hashing.DefaultZipLimits
				}
				err := InstallPackageDir(workDir, zipPath, final, limits)
				if err == nil {
					t.Fatal("the archive was unpacked")
				}
				msg := err.Error()
				if !strings.Contains(msg, fmt.Sprintf("unpack %s: entry %q", zipPath, tt.entry)) || !strings.Contains(msg, tt.why) {
					t.Errorf("error %q does not name entry %q and say %q", msg, tt.entry, tt.why)
				}
				if tt.unsafe && !errors.Is(err, ErrUnsafeArchive) {
					t.Errorf("error %q does not match ErrUnsafeArchive", msg)
				}
				diffViews(t, "after a refused archive", clientView(t, root), before)
				if _, err := os.Lstat(final); existing == errors.Is(err, fs.ErrNotExist) {
					t.Errorf("package directory: %v, existed before: %v", err, existing)
				}
				wantWorkDirEmpty(t, workDir)
			})
		}
	}
}

// TestUnpackStopsReadingAtTheCap checks the byte cap while writing, which
// the declared sizes checked beforehand normally make unreachable.
func TestUnpackStopsReadingAtTheCap(t *testing.T) {
	zipPath := writeTestPackageZip(t, zfile("big", strings.Repeat("x", 100), 0))
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	entries, err := checkPackageEntries(zr.File, hashing.DefaultZipLimits)
	if err != nil {
		t.Fatal(err)
	}
	n, err := writePackageFile(entries[0], filepath.Join(t.TempDir(), "big"), 7, 7)
	if !errors.Is(err, ErrUnsafeArchive) || !strings.Contains(err.Error(), "limit of 7 bytes") {
		t.Errorf("got error %v, want the byte limit", err)
	}
	if n != 8 {
		t.Errorf("read %d bytes, want to stop at the cap plus one (8)", n)
	}
}

// TestInstallPackageDirCrash stops InstallPackageDir between its steps, as
// a SIGKILL would, and checks what clients see and that the next run's
// cleanup of the work directory leaves a consistent tree.
func TestInstallPackageDirCrash(t *testing.T) {
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("after extracting existing=%v", existing), func(t *testing.T) {
			root, workDir, final := installLayout(t)
			zipPath, want := newPackage(t)
			if existing {
				writeOldPackage(t, final)
			}
			before := clientView(t, root)
			job, err := stagePackageDir(workDir, zipPath, hashing.DefaultZipLimits)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(job) != workDir {
				t.Errorf("job directory %s is not in %s", job, workDir)
			}
			diffViews(t, "crash before publishing", clientView(t, root), before)
			// The staged copy is complete: publishing it gives the package.
			staged := clientView(t, filepath.Join(job, installNewName))
			pkg := "registry.opentofu.org/hashicorp/null/3.2.1/linux_amd64/"
			for k, v := range want {
				if rel, ok := strings.CutPrefix(k, pkg); ok && staged[rel] != v {
					t.Errorf("staged %s is %q, want %q", rel, staged[rel], v)
				}
			}
			// The next run removes the work directory: nothing changes.
			if err := os.RemoveAll(workDir); err != nil {
				t.Fatal(err)
			}
			diffViews(t, "after the next run's cleanup", clientView(t, root), before)
			if err := InstallPackageDir(workDir, zipPath, final, hashing.DefaultZipLimits); err != nil {
				t.Fatal(err)
			}
			diffViews(t, "after the next run", clientView(t, root), want)
		})
	}

	t.Run("between the fallback renames", func(t *testing.T) {
		root, workDir, final := installLayout(t)
		zipPath, want := newPackage(t)
		writeOldPackage(t, final)
		old := clientView(t, root)
		job, err := stagePackageDir(workDir, zipPath, hashing.DefaultZipLimits)
		if err != nil {
			t.Fatal(err)
		}
		if err := moveAside(final, job); err != nil {
			t.Fatal(err)
		}
		// No package at all, and nothing else: the old one is in workDir.
		wantView := make(map[string]string)
		for k, v := range old {
			if !strings.HasPrefix(k, "registry.opentofu.org/hashicorp/null/3.2.1/linux_amd64") {
				wantView[k] = v
			}
		}
		diffViews(t, "crash between the fallback renames", clientView(t, root), wantView)
		if _, err := os.Stat(filepath.Join(job, installOldName, "old-only.txt")); err != nil {
			t.Errorf("old package not in the work directory: %v", err)
		}
		if err := os.RemoveAll(workDir); err != nil {
			t.Fatal(err)
		}
		if err := InstallPackageDir(workDir, zipPath, final, hashing.DefaultZipLimits); err != nil {
			t.Fatal(err)
		}
		diffViews(t, "after the next run", clientView(t, root), want)
	})

	t.Run("after publishing before cleanup", func(t *testing.T) {
		root, workDir, final := installLayout(t)
		zipPath, want := newPackage(t)
		writeOldPackage(t, final)
		job, err := stagePackageDir(workDir, zipPath, hashing.DefaultZipLimits)
		if err != nil {
			t.Fatal(err)
		}
		if err := publishPackageDir(job, final); err != nil {
			t.Fatal(err)
		}
		diffViews(t, "crash before removing the old package", clientView(t, root), want)
		if err := os.RemoveAll(workDir); err != nil {
			t.Fatal(err)
		}
		diffViews(t, "after the next run's cleanup", clientView(t, root), want)
	})
}

//go:build unix

package hashing

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/testutil/hostilefs"
)

// modFile is one file of a test module: its content and mode.
type modFile struct {
	body string
	mode fs.FileMode
}

// writeModTree writes files (slash names) into dir in the order given, then
// dirs (empty directories) and links (name → target).
func writeModTree(t *testing.T, dir string, names []string, files map[string]modFile, dirs []string, links [][2]string) {
	t.Helper()
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name].body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, files[name].mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(d)), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(dir, filepath.FromSlash(l[0]))); err != nil {
			t.Fatal(err)
		}
	}
}

func packDir(t *testing.T, dir string, lim ModuleLimits) ([]byte, ModulePack) {
	t.Helper()
	var buf bytes.Buffer
	p, err := PackModule(dir, &buf, lim)
	if err != nil {
		t.Fatalf("PackModule: %v", err)
	}
	return buf.Bytes(), p
}

// The same content gives the same bytes, whatever the order the files were
// made in, their times, their permissions other than the executable bit,
// and what a .git directory holds.
func TestPackModuleIsAFunctionOfContent(t *testing.T) {
	names := []string{"main.tf", "modules/b/x.tf", "modules/a/y.tf", "scripts/run.sh", "a-b.tf"}
	first := map[string]modFile{
		"main.tf": {"module {}\n", 0o600}, "modules/b/x.tf": {"x\n", 0o600}, "modules/a/y.tf": {"", 0o600},
		"scripts/run.sh": {"#!/bin/sh\n", 0o700}, "a-b.tf": {"ab", 0o600},
	}
	second := map[string]modFile{}
	for name, f := range first {
		second[name] = modFile{f.body, 0o644}
	}
	second["scripts/run.sh"] = modFile{"#!/bin/sh\n", 0o751}
	links := [][2]string{{"modules/link.tf", "b/x.tf"}, {"chain.tf", "modules/link.tf"}}

	a, b := t.TempDir(), t.TempDir()
	writeModTree(t, a, names, first, []string{"empty/inner", ".git/objects"}, links)
	reversed := []string{names[4], names[3], names[2], names[1], names[0]}
	writeModTree(t, b, reversed, second, []string{"empty/inner", "modules/.git"}, links)
	if err := os.WriteFile(filepath.Join(a, ".git", "HEAD"), []byte("ref: x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, name := range names {
		if err := os.Chtimes(filepath.Join(b, name), old, old); err != nil {
			t.Fatal(err)
		}
	}

	za, pa := packDir(t, a, ModuleLimits{})
	zb, pb := packDir(t, b, ModuleLimits{})
	if !bytes.Equal(za, zb) {
		t.Fatalf("the same content packed to different bytes (%x, %x)", sha256.Sum256(za), sha256.Sum256(zb))
	}
	want := ModulePack{Files: 7, Bytes: int64(len("module {}\nx\n#!/bin/sh\nab") + 2*len("x\n"))}
	if diff := cmp.Diff(want, pa); diff != "" {
		t.Errorf("ModulePack (-want +got):\n%s", diff)
	}
	if pa != pb {
		t.Errorf("ModulePack differs: %+v, %+v", pa, pb)
	}
}

// unpacked is an entry as read back from the archive.
type unpacked struct {
	Name   string
	Mode   fs.FileMode
	Method uint16
	Body   string
}

// The archive reads back with archive/zip: sorted entries, every directory,
// fixed times without extra fields, modes 0644/0755, links as files.
func TestPackModuleRoundTrips(t *testing.T) {
	dir := t.TempDir()
	files := map[string]modFile{"main.tf": {"main", 0o640}, "bin/tool": {"tool", 0o744}, "sub/a.tf": {"a", 0o600}}
	writeModTree(t, dir, []string{"main.tf", "bin/tool", "sub/a.tf"}, files, []string{"empty"},
		[][2]string{{"sub/tool-link", "../bin/tool"}})
	data, _ := packDir(t, dir, ModuleLimits{})

	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	var got []unpacked
	for _, f := range zr.File {
		if !f.Modified.Equal(epoch) || len(f.Extra) != 0 {
			t.Errorf("%s: modified %v, extra %x; want %v and no extra fields", f.Name, f.Modified, f.Extra, epoch)
		}
		got = append(got, unpacked{f.Name, f.Mode(), f.Method, readModEntry(t, f)})
	}
	want := []unpacked{
		{"bin/", fs.ModeDir | 0o755, zip.Store, ""},
		{"bin/tool", 0o755, zip.Deflate, "tool"},
		{"empty/", fs.ModeDir | 0o755, zip.Store, ""},
		{"main.tf", 0o644, zip.Deflate, "main"},
		{"sub/", fs.ModeDir | 0o755, zip.Store, ""},
		{"sub/a.tf", 0o644, zip.Deflate, "a"},
		{"sub/tool-link", 0o755, zip.Deflate, "tool"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// A module package is a valid provider-style archive too: HashArchive (and
// so CheckUnpackable) takes it.
func TestPackModuleHashes(t *testing.T) {
	dir := t.TempDir()
	writeModTree(t, dir, []string{"a/b.tf"}, map[string]modFile{"a/b.tf": {"b", 0o644}}, []string{"c"}, nil)
	data, _ := packDir(t, dir, ModuleLimits{})
	path := filepath.Join(t.TempDir(), "m.zip")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HashArchive(path, sha256.Sum256(data), DefaultZipLimits); err != nil {
		t.Fatalf("HashArchive: %v", err)
	}
}

func readModEntry(t *testing.T, f *zip.File) string {
	t.Helper()
	r, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What cannot be packed is refused, naming the path inside the package.
func TestPackModuleRefuses(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		lim   ModuleLimits
		want  string // in the error, after the path named
		path  string // named in the error
	}{
		{name: "link outside", setup: modLink("evil", outside), want: "outside", path: "evil"},
		{name: "relative link outside", setup: modLink("sub/evil", "../../secret"), want: "outside", path: "sub/evil"},
		{name: "link to /dev/zero", setup: func(t *testing.T, dir string) { hostilefs.DevZero(t, filepath.Join(dir, "zero")) }, want: "outside", path: "zero"},
		{name: "link through a link outside", setup: modChain, want: "outside", path: "b"},
		{name: "link loop", setup: modLoop, want: "loop", path: "loop1"},
		{name: "dangling link", setup: modLink("gone", "nothing-here"), want: "dangles", path: "gone"},
		{name: "link to a directory", setup: modLink("d", "."), want: "directory", path: "d"},
		{name: "named pipe", setup: func(t *testing.T, dir string) { hostilefs.FIFO(t, filepath.Join(dir, "pipe")) }, want: "named pipe", path: "pipe"},
		{name: "socket", setup: modSocket, want: "socket", path: "sock"},
		{name: "device", setup: modDevice, want: "device", path: "null"},
		{name: "backslash", setup: modWrite(`a\b`, "x"), want: "backslash", path: `a\\b`},
		{name: "newline", setup: modWrite("a\nb", "x"), want: "line break", path: `a\nb`},
		{name: "too many files", setup: modWrite("c", "x"), lim: ModuleLimits{MaxFiles: 2}, want: "limit of 2 entries", path: "c"},
		{name: "too many bytes", setup: modWrite("c", "xyz"), lim: ModuleLimits{MaxBytes: 3}, want: "limit of 3 unpacked bytes", path: "c"},
		{name: "sparse file", setup: modSparse, want: "limit of 1073741824 unpacked bytes", path: "huge"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeModTree(t, dir, []string{"a.tf", "b.tf"}, map[string]modFile{"a.tf": {"a", 0o644}, "b.tf": {"b", 0o644}}, nil, nil)
			tc.setup(t, dir)
			_, err := hostilefs.Within(t, "", func() (ModulePack, error) { return PackModule(dir, io.Discard, tc.lim) })
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("PackModule: err = %v, want one naming %q and saying %q", err, tc.path, tc.want)
			}
		})
	}
}

func modLink(name, target string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

func modWrite(name, body string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// modChain makes "up", a modLink to the package root, and "b", a modLink that leaves
// the root through "up" and comes back ("up/../<base>/a.tf"): its target is
// inside, its way there is not.
func modChain(t *testing.T, dir string) {
	modLink("up", ".")(t, dir)
	modLink("b", "up/../"+filepath.Base(dir)+"/a.tf")(t, dir)
}

func modSocket(t *testing.T, dir string) {
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Skipf("cannot make a socket: %v", err)
	}
	t.Cleanup(func() { l.Close() })
}

func modDevice(t *testing.T, dir string) {
	// The modDevice numbers of /dev/null (1, 3); only root can make one.
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Skipf("cannot make a modDevice file: %v", err)
	}
}

func modSparse(t *testing.T, dir string) {
	hostilefs.Sparse(t, filepath.Join(dir, "huge"), 2<<30)
}

func modLoop(t *testing.T, dir string) {
	modLink("loop1", "loop2")(t, dir)
	modLink("loop2", "loop1")(t, dir)
}

//go:build unix

package layout

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// The output directory is hostile input: these tests plant links, pipes
// and devices in it and check that tfmirror neither writes outside it,
// nor writes through a link, nor reads what is not a regular file.

// expectNames fails the test unless dir holds exactly the names want.
func expectNames(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %q, want %q: something was written outside the mirror", dir, got, want)
	}
}

// expectFile fails the test unless path holds content.
func expectFile(t *testing.T, path, content string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != content {
		t.Errorf("%s = %q, %v; want %q, unchanged", path, data, err, content)
	}
}

// expectRefused fails the test unless err is an error naming path.
func expectRefused(t *testing.T, what string, err error, path string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
	} else if !strings.Contains(err.Error(), path) {
		t.Errorf("%s: error %q does not name %s", what, err, path)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A link OUT/<host> to a directory elsewhere (or inside OUT) is refused
// by every operation of the store: nothing is written, deleted, read or
// listed through it.
func TestHardeningHostDirLink(t *testing.T) {
	for _, inside := range []bool{false, true} {
		t.Run(map[bool]string{false: "outside", true: "inside"}[inside], func(t *testing.T) {
			out := t.TempDir()
			elsewhere := t.TempDir()
			if inside {
				elsewhere = filepath.Join(out, "other")
			}
			writeFile(t, filepath.Join(elsewhere, "hashicorp", "foo", "index.json"), "victim")
			hostLink := filepath.Join(out, "registry.opentofu.org")
			symlink(t, elsewhere, hostLink)
			tr, err := Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ctx := context.Background()
			p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")

			err = tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
				{Platform: plat, Staged: stage(t, tr, "a.zip", "archive"), Hashes: []hashing.Hash{zhA}},
			}})
			expectRefused(t, "Publish", err, hostLink)
			expectRefused(t, "Put", tr.Store.Put(ctx, IndexPath(p), Content{Data: []byte("{}")}), hostLink)
			archive := ArchivePath(p, v, plat)
			expectRefused(t, "Put of a file", tr.Store.Put(ctx, archive, Content{File: stage(t, tr, "b.zip", "b"), Move: true}), hostLink)
			expectRefused(t, "Delete", tr.Store.Delete(ctx, IndexPath(p)), hostLink)
			_, err = tr.Store.ReadFile(ctx, IndexPath(p), MaxDocumentBytes)
			expectRefused(t, "ReadFile", err, hostLink)
			_, err = tr.Store.Stat(ctx, IndexPath(p))
			expectRefused(t, "Stat", err, hostLink)
			body, err := tr.Store.Open(ctx, IndexPath(p))
			if err == nil {
				body.Close()
			}
			expectRefused(t, "Open", err, hostLink)
			_, err = tr.Store.List(ctx, "registry.opentofu.org")
			expectRefused(t, "List", err, hostLink)
			if files, err := tr.Store.List(ctx, ""); err != nil || len(files) != 0 && !inside {
				t.Errorf("List of the whole tree: %q, %v; want nothing through the link", files, err)
			}
			expectNames(t, filepath.Join(elsewhere, "hashicorp", "foo"), "index.json")
			expectFile(t, filepath.Join(elsewhere, "hashicorp", "foo", "index.json"), "victim")
		})
	}
}

// A link at OUT/.tfmirror/lock is never opened for writing: the file it
// points to is not truncated. A link in place of OUT/.tfmirror is
// refused too.
func TestHardeningLockLink(t *testing.T) {
	t.Run("lock file", func(t *testing.T) {
		out := t.TempDir()
		victim := filepath.Join(t.TempDir(), "precious")
		writeFile(t, victim, "precious content")
		lockLink := filepath.Join(out, PrivateDirName, "lock")
		symlink(t, victim, lockLink)
		s, err := NewDirStore(out)
		if err != nil {
			t.Fatal(err)
		}
		unlock, err := s.Lock(context.Background(), 0, Exclusive)
		if err == nil {
			_ = unlock()
		}
		expectRefused(t, "Lock", err, lockLink)
		expectFile(t, victim, "precious content")
	})
	t.Run("lock pipe", func(t *testing.T) {
		out := t.TempDir()
		pipe := filepath.Join(out, PrivateDirName, "lock")
		if err := os.MkdirAll(filepath.Dir(pipe), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(pipe, 0o644); err != nil {
			t.Skip(err)
		}
		s, err := NewDirStore(out)
		if err != nil {
			t.Fatal(err)
		}
		err = within(t, func() error {
			unlock, err := s.Lock(context.Background(), 0, Exclusive)
			if err == nil {
				_ = unlock()
			}
			return err
		})
		expectRefused(t, "Lock", err, pipe)
	})
	t.Run("private directory", func(t *testing.T) {
		out := t.TempDir()
		elsewhere := t.TempDir()
		private := filepath.Join(out, PrivateDirName)
		symlink(t, elsewhere, private)
		tr, err := Open(out)
		if err == nil {
			tr.Close()
		}
		expectRefused(t, "Open", err, private)
		expectNames(t, elsewhere)
	})
}

// A link at .tfmirror/partial/<sha256> is refused: the build neither
// overwrites its target nor publishes an archive that is a link. A link
// in place of the partial directory is not followed either, and old
// files where it points are not deleted.
func TestHardeningPartialLink(t *testing.T) {
	const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	t.Run("partial download", func(t *testing.T) {
		tr := openTree(t)
		victim := filepath.Join(t.TempDir(), "precious")
		writeFile(t, victim, "precious content")
		partial := filepath.Join(tr.Root(), PrivateDirName, partialDirName, digest)
		symlink(t, victim, partial)
		f, _, ok, err := tr.OpenPartial(digest)
		if err == nil && ok {
			_, _ = f.WriteString("downloaded bytes")
			f.Close()
		}
		expectRefused(t, "OpenPartial", err, partial)
		expectFile(t, victim, "precious content")

		// Published as it is (the move of a completed download), the link
		// is refused rather than becoming the archive.
		p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
		err = tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{{Platform: plat, Staged: partial, Hashes: []hashing.Hash{zhA}, Move: true}}})
		expectRefused(t, "Publish of a linked partial download", err, partial)
		if info, err := os.Lstat(tr.Path(ArchivePath(p, v, plat))); err == nil {
			t.Errorf("an archive was published: %v", info.Mode())
		}
		expectFile(t, victim, "precious content")
	})
	t.Run("partial directory", func(t *testing.T) {
		out := t.TempDir()
		elsewhere := t.TempDir()
		old := filepath.Join(elsewhere, digest)
		writeFile(t, old, "someone else's file")
		week := time.Now().Add(-8 * 24 * time.Hour)
		if err := os.Chtimes(old, week, week); err != nil {
			t.Fatal(err)
		}
		partialDir := filepath.Join(out, PrivateDirName, partialDirName)
		symlink(t, elsewhere, partialDir)
		tr, err := Open(out)
		if err == nil {
			if f, _, ok, err := tr.OpenPartial(digest); err == nil && ok {
				f.Close()
			}
			tr.Close()
		}
		expectFile(t, old, "someone else's file")
		expectNames(t, elsewhere, digest)
	})
}

// A staging directory swapped for a link while a build runs is not
// followed: nothing is created or removed where it points. Nor is a link
// where older versions kept their staging area, or in place of a dead
// run's directory.
func TestHardeningStagingLink(t *testing.T) {
	out := t.TempDir()
	elsewhere := t.TempDir()
	writeFile(t, filepath.Join(elsewhere, "keep"), "keep")
	legacy := filepath.Join(out, filepath.FromSlash(StagingDirName))
	symlink(t, elsewhere, legacy)
	deadRun := filepath.Join(out, PrivateDirName, runPrefix+"dead")
	symlink(t, elsewhere, deadRun)
	tr, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{legacy, deadRun} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after Open: %v; want the link removed", p, err)
		}
	}
	expectNames(t, elsewhere, "keep")
	staging := tr.StagingDir()
	if info, err := os.Lstat(staging); err != nil || !info.IsDir() {
		t.Errorf("staging area after Open: %v, %v; want a real directory", info, err)
	}
	if err := os.RemoveAll(staging); err != nil {
		t.Fatal(err)
	}
	symlink(t, elsewhere, staging)
	f, err := tr.CreateStaged("a.zip")
	if err == nil {
		f.Close()
	}
	expectRefused(t, "CreateStaged", err, staging)
	tr.Close()
	expectNames(t, elsewhere, "keep")
}

// within runs f and fails the test if it takes more than 10 seconds or
// allocates more than 1 MiB.
func within(t *testing.T, f func() error) error {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("allocated %d bytes", grew)
		}
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("still running after 10s")
		return nil
	}
}

// An index.json or an archive replaced by a link to /dev/zero, by a named
// pipe or by a device is refused at once: never read, never waited on.
func TestHardeningSpecialFiles(t *testing.T) {
	ctx := context.Background()
	p, v, plat := addrs.MustParseProvider("bücher.example/acme/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	plant := map[string]func(path string) error{
		"link to /dev/zero": func(path string) error { return os.Symlink("/dev/zero", path) },
		"named pipe":        func(path string) error { return syscall.Mkfifo(path, 0o644) },
		"device":            func(path string) error { return syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|5) }, // /dev/zero's numbers
	}
	for name, plantAt := range plant {
		for _, rel := range []string{IndexPath(p), ArchivePath(p, v, plat)} {
			t.Run(name+"/"+filepath.Base(rel), func(t *testing.T) {
				tr := storeWith(t, map[string]string{"terraform-provider-foo_v1.0.0": "binary"})
				path := tr.Path(rel)
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				if err := plantAt(path); err != nil {
					t.Skipf("cannot make a %s: %v", name, err)
				}
				ops := map[string]func() error{
					"ReadFile": func() error { _, err := tr.Store.ReadFile(ctx, rel, MaxDocumentBytes); return err },
					"Stat":     func() error { _, err := tr.Store.Stat(ctx, rel); return err },
					"Digest":   func() error { _, err := tr.Digest(ctx, rel); return err },
					"Open": func() error {
						body, err := tr.Store.Open(ctx, rel)
						if err == nil {
							_, err = io.Copy(io.Discard, io.LimitReader(body, 64<<20))
							body.Close()
							if err == nil {
								err = errors.New("opened")
							}
						}
						return err
					},
				}
				for op, f := range ops {
					err := within(t, f)
					expectRefused(t, op, err, path)
					if !errors.Is(err, ErrNotRegular) {
						t.Errorf("%s: %v; want an error wrapping ErrNotRegular", op, err)
					}
				}
				if rel == IndexPath(p) {
					err := within(t, func() error { _, err := tr.ReadIndex(ctx, p); return err })
					expectRefused(t, "ReadIndex", err, path)
				}
			})
		}
	}
}

// Materialize writes a filesystem mirror without following a link at
// OUT/<host> or at a package directory.
func TestHardeningMaterializeLinks(t *testing.T) {
	store := storeWith(t, map[string]string{"terraform-provider-foo_v1.0.0": "binary"})
	for _, kind := range []Kind{Packed, Unpacked} {
		t.Run(string(kind), func(t *testing.T) {
			out := t.TempDir()
			elsewhere := t.TempDir()
			hostLink := filepath.Join(out, "bücher.example")
			symlink(t, elsewhere, hostLink)
			err := Materialize(context.Background(), store.Tree, store.Workspace, out, kind, hashing.DefaultZipLimits)
			expectRefused(t, "Materialize", err, hostLink)
			expectNames(t, elsewhere)
		})
	}
	t.Run("package directory", func(t *testing.T) {
		out := t.TempDir()
		elsewhere := t.TempDir()
		writeFile(t, filepath.Join(elsewhere, "keep"), "keep")
		pkg := filepath.Join(out, "bücher.example", "acme", "foo", "1.0.0", "linux_amd64")
		symlink(t, elsewhere, pkg)
		err := within(t, func() error {
			return Materialize(context.Background(), store.Tree, store.Workspace, out, Unpacked, hashing.DefaultZipLimits)
		})
		expectRefused(t, "Materialize", err, pkg)
		expectNames(t, elsewhere, "keep")
	})
}

// Materialize removes what an interrupted run left in the provider
// directories of a filesystem mirror, and nothing else.
func TestHardeningMaterializeLeftovers(t *testing.T) {
	store := storeWith(t, map[string]string{"terraform-provider-foo_v1.0.0": "binary"})
	out := t.TempDir()
	leftover := filepath.Join(out, "bücher.example", "acme", "foo", ".tfmirror-tmp-terraform-provider-foo_1.0.0_linux_amd64.zip-0123456789abcdef")
	operator := []string{
		filepath.Join(out, "bücher.example", "acme", "foo", ".tmp-notes"),
		filepath.Join(out, "docs", ".tfmirror-tmp-x"),
	}
	for _, p := range append([]string{leftover}, operator...) {
		writeFile(t, p, "x")
	}
	if err := Materialize(context.Background(), store.Tree, store.Workspace, out, Packed, hashing.DefaultZipLimits); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover %s was not removed: %v", leftover, err)
	}
	for _, p := range operator {
		expectFile(t, p, "x")
	}
}

// The cleanup of interrupted writes removes only tfmirror's own temporary
// files, and only in the directories tfmirror writes: an operator's
// files survive whatever their names.
func TestHardeningLeftoversOnlyOwn(t *testing.T) {
	tr := openTree(t)
	p, v, plat := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	for _, p := range []addrs.Provider{p, addrs.MustParseProvider("bücher.example/acme/delta")} {
		if err := tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{
			{Platform: plat, Staged: stage(t, tr, "a.zip", "archive"), Hashes: []hashing.Hash{zhA}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	root := tr.Root()
	tr.Close()
	operator := []string{
		"docs/.tmp-notes",
		"docs/.tmp-index.json-123",
		"docs/.tfmirror-tmp-draft",
		"docs/a/b/.tmp-notes-1",
		"docs/a/b/.tfmirror-tmp-x",
		".tmp-notes",
		"notes.txt",
		fooDir + "/.tmp-notes",
		fooDir + "/README.md",
		"other.example/acme/tool/.tfmirror-tmp-x", // no tfmirror file there
	}
	leftovers := []string{
		".tfmirror-tmp-catalog.json-0123456789abcdef",
		fooDir + "/.tfmirror-tmp-index.json-0123456789abcdef",
		fooDir + "/.tfmirror-tmp-terraform-provider-foo_1.0.0_linux_amd64.zip-0123456789abcdef",
		PrivateDirName + "/.tfmirror-tmp-serve-ca.pem-0123456789abcdef",
		"replica/registry.opentofu.org/v1/providers/hashicorp/foo/.tfmirror-tmp-versions-0123456789abcdef",
		fooDir + "/.tmp-index.json-4567", // an older release's
		"xn--bcher-kva.example/acme/delta/.tfmirror-tmp-1.1.0.json-0123456789abcdef",
		// a new provider's first archive, killed while being published
		"registry.opentofu.org/hashicorp/gamma/.tfmirror-tmp-terraform-provider-gamma_1.0.0_linux_amd64.zip-0123456789abcdef",
	}
	for _, rel := range append(append([]string{}, operator...), leftovers...) {
		writeFile(t, filepath.Join(root, filepath.FromSlash(rel)), rel)
	}
	again, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	for _, rel := range operator {
		expectFile(t, filepath.Join(root, filepath.FromSlash(rel)), rel)
	}
	for _, rel := range leftovers {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s was not removed: %v", rel, err)
		}
	}
}

// A real leftover of an interrupted write (its temporary file, named as
// atomicfile names it, never renamed) is removed by the next Lock.
func TestHardeningInterruptedWriteRemoved(t *testing.T) {
	tr := openTree(t)
	root, err := atomicfile.OpenRoot(tr.Root())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := root.MkdirAll(fooDir); err != nil {
		t.Fatal(err)
	}
	if err := root.WriteFile(fooDir+"/index.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	f, tmp, err := root.CreateNew(fooDir, atomicfile.TempPrefix+"1.0.0.json-")
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // the process dies here
	tr.Close()
	again, err := Open(tr.Root())
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if _, err := os.Lstat(root.Path(tmp)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("leftover %s was not removed: %v", tmp, err)
	}
}

// TestWorkspaceRefusesLinkedLockFile: a link where a run's lock file
// belongs is refused, naming it, and not followed.
func TestWorkspaceRefusesLinkedLockFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "workspace")
	target := filepath.Join(t.TempDir(), "target")
	writeFile(t, target, "someone else's file")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, runPrefix+"x"+lockSuffix)
	symlink(t, target, link)
	_, err := OpenWorkspace(dir)
	expectRefused(t, "OpenWorkspace", err, link)
	expectFile(t, target, "someone else's file")
}

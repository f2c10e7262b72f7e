package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The output directory is hostile input: a link planted in it never
// makes tfmirror write outside it, and tfmirror deletes only what it
// wrote.

// linkedHost makes OUT/registry.opentofu.org a link to a new, empty
// directory elsewhere and returns both.
func linkedHost(t *testing.T, out string) (link, elsewhere string) {
	t.Helper()
	elsewhere = t.TempDir()
	link = filepath.Join(out, "registry.opentofu.org")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Skipf("cannot make a symbolic link: %v", err)
	}
	return link, elsewhere
}

// expectEmpty fails the test if anything was written into dir.
func expectEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("%s, outside the mirror, holds %d entries (%s...): tfmirror wrote through a link", dir, len(entries), entries[0].Name())
	}
}

// expectFailure fails the test unless the command failed with a message
// naming the link (as the directory was named: path ends with it).
func expectFailure(t *testing.T, code int, stdout, stderr, link string) {
	t.Helper()
	if code == ExitOK {
		t.Errorf("exit %d, want a failure\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	named := filepath.Join(filepath.Base(filepath.Dir(link)), filepath.Base(link))
	if !strings.Contains(stdout+stderr, named) || !strings.Contains(stdout+stderr, "symbolic link") {
		t.Errorf("the failure does not say that %s is a symbolic link\nstdout:\n%s\nstderr:\n%s", named, stdout, stderr)
	}
}

func TestBuildRefusesLinkedHostDir(t *testing.T) {
	for _, kind := range []string{"network", "packed", "unpacked"} {
		t.Run(kind, func(t *testing.T) {
			o, dir := fooOrigin(t)
			link, elsewhere := linkedHost(t, filepath.Join(dir, "site"))
			code, stdout, stderr := o.run(t, dir, "build", "--layout", kind)
			expectFailure(t, code, stdout, stderr, link)
			expectEmpty(t, elsewhere)
		})
	}
}

func TestBundleImportRefusesLinkedHostDir(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	bundle := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", bundle)
	for _, kind := range []string{"network", "packed"} {
		t.Run(kind, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "mirror")
			link, elsewhere := linkedHost(t, dest)
			code, stdout, stderr := o.run(t, work, "bundle", "import", bundle, "--out", dest, "--layout", kind)
			expectFailure(t, code, stdout, stderr, link)
			expectEmpty(t, elsewhere)
		})
	}
}

// A build removes the leftovers of interrupted writes in the directories
// it writes, and nothing else: an operator's files survive, whatever
// their names and wherever they are.
func TestBuildRemovesOnlyItsOwnLeftovers(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	operator := []string{
		"docs/.tmp-notes",
		"docs/.tmp-index.json-123",
		"docs/.tfmirror-tmp-draft",
		"docs/guides/setup/.tmp-notes-1",
		".tmp-notes",
		"robots.txt",
		fooDir + ".tmp-notes",
		fooDir + "README.md",
	}
	leftovers := []string{
		fooDir + ".tfmirror-tmp-index.json-0123456789abcdef",
		fooDir + ".tfmirror-tmp-terraform-provider-foo_1.0.0_linux_amd64.zip-0123456789abcdef",
		".tfmirror-tmp-catalog.json-0123456789abcdef",
		fooDir + ".tmp-1.0.0.json-12345", // a leftover of an older release
	}
	for _, rel := range append(append([]string{}, operator...), leftovers...) {
		path := filepath.Join(site, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(rel), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, o, filepath.Dir(site), "build")
	for _, rel := range operator {
		if data, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(rel))); err != nil || string(data) != rel {
			t.Errorf("the operator's %s: %q, %v; want it kept", rel, data, err)
		}
	}
	for _, rel := range leftovers {
		if _, err := os.Lstat(filepath.Join(site, filepath.FromSlash(rel))); !os.IsNotExist(err) {
			t.Errorf("leftover %s was not removed: %v", rel, err)
		}
	}
	verifyClean(t, o, site)
}

package layout

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/testutil/hostilefs"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// storeWith publishes one release whose linux_amd64 archive holds entries.
func storeWith(t *testing.T, entries map[string]string) *Dir {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range entries {
		hdr := &zip.FileHeader{Name: name, Method: zip.Deflate}
		hdr.SetMode(0o755)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	staged := stage(t, tr, "a.zip", buf.String())
	sums, err := hashing.HashArchive(staged, sha256.Sum256(buf.Bytes()), hashing.DefaultZipLimits)
	if err != nil && !strings.Contains(err.Error(), "outside") {
		t.Fatal(err)
	}
	p, v, plat := addrs.MustParseProvider("bücher.example/acme/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64")
	err = tr.Publish(Release{Provider: p, Version: v, Archives: []Archive{{Platform: plat, Staged: staged, Hashes: sums.All()}},
		Record: &Record{Sums: []byte("x  a.zip\n"), Provenance: Provenance{Archives: map[string]ProvenanceArchive{"linux_amd64": {Filename: "a.zip", H1: sums.H1Unpacked}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestMaterializeLayouts(t *testing.T) {
	store := storeWith(t, map[string]string{"terraform-provider-foo_v1.0.0": "binary", "README.md": "docs"})
	for _, kind := range []Kind{Packed, Unpacked} {
		t.Run(string(kind), func(t *testing.T) {
			out := t.TempDir()
			for range 2 { // the second run finds everything in place
				if err := Materialize(context.Background(), store.Tree, store.Workspace, out, kind, hashing.DefaultZipLimits); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(out, "bücher.example", "acme", "foo")
			if kind == Packed {
				a, _ := os.Stat(filepath.Join(dir, "terraform-provider-foo_1.0.0_linux_amd64.zip"))
				b, _ := os.Stat(store.Path(ArchivePath(addrs.MustParseProvider("bücher.example/acme/foo"), addrs.MustParseVersion("1.0.0"), addrs.MustParsePlatform("linux_amd64"))))
				if a == nil || b == nil || !os.SameFile(a, b) {
					t.Error("the packed archive is not the store's file (hard link)")
				}
				return
			}
			bin := filepath.Join(dir, "1.0.0", "linux_amd64", "terraform-provider-foo_v1.0.0")
			info, err := os.Stat(bin)
			if err != nil || info.Mode().Perm() != 0o755 {
				t.Fatalf("unpacked executable: %v %v", info, err)
			}
			// A damaged unpacked package is replaced.
			if err := os.WriteFile(bin, []byte("damaged"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := Materialize(context.Background(), store.Tree, store.Workspace, out, kind, hashing.DefaultZipLimits); err != nil {
				t.Fatal(err)
			}
			if data, _ := os.ReadFile(bin); string(data) != "binary" {
				t.Errorf("the damaged package was not replaced: %q", data)
			}
		})
	}
}

func TestUnzipRefusesEscapingEntries(t *testing.T) {
	for _, name := range []string{"../evil", "a/../../evil", "/etc/evil"} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create(name)
		_, _ = w.Write([]byte("x"))
		_ = zw.Close()
		src := filepath.Join(t.TempDir(), "z.zip")
		if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		pkg := filepath.Join(dir, "pkg")
		if err := InstallPackageDir(filepath.Join(dir, "work"), src, pkg, hashing.DefaultZipLimits); !errors.Is(err, ErrUnsafeArchive) {
			t.Errorf("%q: err = %v, want a refusal", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "evil")); !os.IsNotExist(err) {
			t.Errorf("%q escaped the package directory", name)
		}
	}
}

// sameContentIn takes a copy with the same bytes (or a link of the same
// file) for the file itself, and nothing else.
func TestSameContentIn(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.zip")
	content := bytes.Repeat([]byte("archive"), 100_000)
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := atomicfile.MkdirAll(out); err != nil {
		t.Fatal(err)
	}
	root, err := atomicfile.OpenRoot(out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	if err := os.WriteFile(filepath.Join(out, "copy.zip"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(src, filepath.Join(out, "link.zip")); err != nil {
		t.Fatal(err)
	}
	other := bytes.Clone(content)
	other[len(other)-1] ^= 1
	if err := os.WriteFile(filepath.Join(out, "other.zip"), other, 0o644); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{"copy.zip": true, "link.zip": true, "other.zip": false, "missing.zip": false} {
		if got := sameContentIn(src, root, rel); got != want {
			t.Errorf("sameContentIn(%s) = %v, want %v", rel, got, want)
		}
	}
}

// HashPackageDir hashes an unpacked package as dirhash does, and treats the
// directory as hostile: a link (to a file that never ends) or a package
// beyond the limits is refused, not read.
func TestHashPackageDir(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"terraform-provider-x": "binary", "docs/README": "readme"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := dirhash.HashDir(dir, "", dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := hashing.HashPackageDir(dir, hashing.ZipLimits{}); err != nil || got != want {
		t.Fatalf("dirH1 = %q, %v; want dirhash's %q", got, err, want)
	}
	if _, err := hashing.HashPackageDir(dir, hashing.ZipLimits{MaxUnpackedBytes: 10}); err == nil || !strings.Contains(err.Error(), "limits") {
		t.Errorf("a package beyond the limits: err = %v", err)
	}
	hostilefs.DevZero(t, filepath.Join(dir, "zero"))
	_, err = hostilefs.Within(t, "", func() (string, error) { return hashing.HashPackageDir(dir, hashing.ZipLimits{}) })
	if err == nil || !strings.Contains(err.Error(), "zero is a symbolic link") {
		t.Errorf("a link to /dev/zero: err = %v, want one naming it", err)
	}
}

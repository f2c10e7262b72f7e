package layout

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
)

// Kind is the shape of the tree clients read.
type Kind string

// The layouts tfmirror writes.
const (
	Network  Kind = "network"  // provider network mirror: index.json, <version>.json, archives
	Packed   Kind = "packed"   // filesystem_mirror with zip archives
	Unpacked Kind = "unpacked" // filesystem_mirror with unpacked packages
)

// ParseKind parses a --layout value.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case Network, Packed, Unpacked:
		return k, nil
	}
	return "", fmt.Errorf("unknown layout %q: use network, packed or unpacked", s)
}

// StoreDirName holds the network tree behind a filesystem layout: the
// archives, indexes and provenance that incremental builds and verify use.
// OpenTofu skips it (".tfmirror" is no hostname).
const StoreDirName = PrivateDirName + "/store"

// StorePath is where the network tree behind a filesystem layout lives.
func StorePath(root string) string { return filepath.Join(root, filepath.FromSlash(StoreDirName)) }

// NetworkRoot is where the network tree of an output of kind lives: root
// itself for a network mirror, its store for a filesystem layout.
func NetworkRoot(root string, kind Kind) string {
	if kind == Network {
		return root
	}
	return StorePath(root)
}

// FilesystemDir is a provider's directory in a filesystem mirror, relative
// to its root: the Unicode hostname (OpenTofu ignores punycode directories
// there), then the namespace and type.
func FilesystemDir(p addrs.Provider) string {
	return filepath.Join(p.Hostname.ForDisplay(), p.Namespace, p.Type)
}

// Materialize makes the filesystem view of kind at root from the network
// tree store: every archive store lists, hard-linked (or copied) for
// Packed, unpacked for Unpacked. Each package appears at once (rename of a
// complete file or directory); packages already present and intact are
// left alone, and nothing is removed.
func Materialize(store *Tree, root string, kind Kind) error {
	providers, err := store.providers()
	if err != nil {
		return err
	}
	for _, p := range providers {
		if err := materializeProvider(store, root, kind, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

func materializeProvider(store *Tree, root string, kind Kind, p addrs.Provider) error {
	idx, err := store.ReadIndex(p)
	if err != nil {
		return err
	}
	for raw := range idx.Versions {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			return err
		}
		doc, err := store.ReadVersion(p, v)
		if err != nil {
			return err
		}
		for platName := range doc.Archives {
			plat, err := addrs.ParsePlatform(platName)
			if err != nil {
				return err
			}
			src := store.Path(ArchivePath(p, v, plat))
			if err := materializePackage(store, root, kind, src, p, v, plat); err != nil {
				return fmt.Errorf("%s %s: %w", v, plat, err)
			}
		}
	}
	return nil
}

func materializePackage(store *Tree, root string, kind Kind, src string, p addrs.Provider, v addrs.Version, plat addrs.Platform) error {
	dir := filepath.Join(root, FilesystemDir(p))
	if kind == Packed {
		return linkOrCopy(src, filepath.Join(dir, ArchiveName(p, v, plat)))
	}
	final := filepath.Join(dir, v.String(), plat.String())
	rec, err := store.ReadRecord(p, v)
	if err == nil {
		if a, ok := rec.Provenance.Archives[plat.String()]; ok && dirHashIs(final, string(a.H1)) {
			return nil // already unpacked and intact
		}
	}
	return unpackInto(store, src, final)
}

func dirHashIs(dir, want string) bool {
	if want == "" {
		return false
	}
	got, err := dirhash.HashDir(dir, "", dirhash.Hash1)
	return err == nil && got == want
}

// linkOrCopy makes dst the same file as src: a hard link, or an atomic
// streamed copy where links are not possible. An existing dst with the same
// content stays.
func linkOrCopy(src, dst string) error {
	if sameContent(src, dst) {
		return nil
	}
	if err := MkdirAll(filepath.Dir(dst)); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(dst), tempPrefix+filepath.Base(dst)+"-link")
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		return copyFile(src, dst)
	}
	return Rename(tmp, dst)
}

// copyFile copies src to dst atomically without holding it in memory.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.CreateTemp(filepath.Dir(dst), tempPrefix+filepath.Base(dst)+"-*")
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		_ = os.Remove(out.Name())
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := SyncClose(out); err != nil {
		_ = os.Remove(out.Name())
		return err
	}
	return Rename(out.Name(), dst)
}

// sameContent reports whether a and b are the same file or hold the same
// bytes.
func sameContent(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false
	}
	if os.SameFile(ia, ib) {
		return true
	}
	if ia.Size() != ib.Size() {
		return false
	}
	sa, _, errA := hashing.HashFile(a)
	sb, _, errB := hashing.HashFile(b)
	return errA == nil && errB == nil && sa == sb
}

// unpackInto extracts the zip at src into a staging directory, then renames
// it to final, replacing what was there.
func unpackInto(store *Tree, src, final string) error {
	staging, err := os.MkdirTemp(store.staging, "unpack-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(staging) }()
	if err := unzip(src, staging); err != nil {
		return err
	}
	if err := MkdirAll(filepath.Dir(final)); err != nil {
		return err
	}
	// A rename onto an existing directory fails: move the old one aside
	// first; a client sees the old package or the new one.
	old := final + ".old-" + filepath.Base(staging)
	if err := os.Rename(final, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(staging, final); err != nil {
		return err
	}
	_ = os.RemoveAll(old)
	return syncDir(filepath.Dir(final))
}

// unzip extracts every entry of the zip at src under dir, refusing names
// that would leave it, and keeping the executable bit.
func unzip(src, dir string) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return err
	}
	defer zr.Close()
	if err := os.Chmod(dir, DirMode); err != nil {
		return err
	}
	for _, f := range zr.File {
		if err := extract(f, dir); err != nil {
			return fmt.Errorf("unpack %s: %w", f.Name, err)
		}
	}
	return nil
}

func extract(f *zip.File, dir string) error {
	rel := filepath.FromSlash(f.Name)
	if !filepath.IsLocal(rel) || strings.Contains(f.Name, "\\") {
		return fmt.Errorf("entry would unpack outside the package directory")
	}
	path := filepath.Join(dir, rel)
	if strings.HasSuffix(f.Name, "/") {
		return MkdirAll(path)
	}
	if err := MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	mode := FileMode
	if f.Mode()&0o111 != 0 {
		mode = 0o755
	}
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		_ = out.Close()
		return err
	}
	if err := out.Chmod(mode); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// providers lists the providers of the tree's catalog.
func (t *Tree) providers() ([]addrs.Provider, error) {
	data, err := os.ReadFile(t.Path(CatalogPath))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := DecodeCatalog(data)
	if err != nil {
		return nil, err
	}
	out := make([]addrs.Provider, 0, len(c.Providers))
	for _, raw := range c.Providers {
		p, err := addrs.ParseProvider(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CatalogPath, err)
		}
		out = append(out, p)
	}
	return out, nil
}

package layout

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
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

// Filesystem is what ExistingKind says of a packed or unpacked filesystem
// mirror, which cannot be told apart from its store.
const Filesystem Kind = "filesystem"

// ExistingKind says what a directory already holds: Network when it has a
// catalog.json, Filesystem when it has the store of a filesystem layout,
// "" when neither (an empty directory, or none at all). It is the one place
// that tells them apart.
func ExistingKind(root string) Kind {
	if _, err := os.Lstat(filepath.Join(root, CatalogPath)); err == nil {
		return Network
	}
	if info, err := os.Lstat(StorePath(root)); err == nil && info.IsDir() {
		return Filesystem
	}
	return ""
}

// NetworkTreeOf is where the network tree of an existing mirror directory
// is: the store behind a filesystem mirror, else root itself.
func NetworkTreeOf(root string) string {
	if ExistingKind(root) == Filesystem {
		return StorePath(root)
	}
	return root
}

// FilesystemDir is a provider's directory in a filesystem mirror, relative
// to its root: the Unicode hostname (OpenTofu ignores punycode directories
// there), then the namespace and type.
func FilesystemDir(p addrs.Provider) string {
	return filepath.Join(p.Hostname.ForDisplay(), p.Namespace, p.Type)
}

// Materialize makes the filesystem view of kind at root from the network
// tree store (a local directory): every archive store lists, hard-linked
// (or copied) for Packed, unpacked for Unpacked. Each package appears
// complete or not at all (InstallPackageDir), with its temporaries only in
// the workspace; packages already present and intact are left alone, and
// nothing is removed.
func Materialize(ctx context.Context, store *Tree, work *Workspace, root string, kind Kind, limits hashing.ZipLimits) error {
	providers, err := store.Providers(ctx)
	if err != nil {
		return err
	}
	for _, p := range providers {
		if err := materializeProvider(ctx, store, work, root, kind, p, limits); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

func materializeProvider(ctx context.Context, store *Tree, work *Workspace, root string, kind Kind, p addrs.Provider, limits hashing.ZipLimits) error {
	idx, err := store.ReadIndex(ctx, p)
	if err != nil {
		return err
	}
	if err := prepareProviderDir(root, filepath.ToSlash(FilesystemDir(p))); err != nil {
		return err
	}
	for raw := range idx.Versions {
		v, err := addrs.ParseVersion(raw)
		if err != nil {
			return err
		}
		doc, err := store.ReadVersion(ctx, p, v)
		if err != nil {
			return err
		}
		for platName := range doc.Archives {
			plat, err := addrs.ParsePlatform(platName)
			if err != nil {
				return err
			}
			src, ok := store.LocalPath(ArchivePath(p, v, plat))
			if !ok {
				return fmt.Errorf("a filesystem mirror is made from a local network tree, not from %s", store.Location())
			}
			if err := materializePackage(ctx, store, work, root, kind, src, p, v, plat, limits); err != nil {
				return fmt.Errorf("%s %s: %w", v, plat, err)
			}
		}
	}
	return nil
}

func materializePackage(ctx context.Context, store *Tree, work *Workspace, root string, kind Kind, src string, p addrs.Provider, v addrs.Version, plat addrs.Platform, limits hashing.ZipLimits) error {
	t, err := atomicfile.OpenRoot(root)
	if err != nil {
		return err
	}
	defer func() { _ = t.Close() }()
	dir := filepath.ToSlash(FilesystemDir(p))
	if kind == Packed {
		return linkOrCopy(src, t, path.Join(dir, ArchiveName(p, v, plat)))
	}
	pkg := path.Join(dir, v.String(), plat.String())
	if err := preparePackageDir(t, pkg); err != nil {
		return err
	}
	final := t.Path(pkg)
	rec, err := store.ReadRecord(ctx, p, v)
	if err == nil {
		if a, ok := rec.Provenance.Archives[plat.String()]; ok && dirHashIs(final, string(a.H1), limits) {
			return nil // already unpacked and intact
		}
	}
	return InstallPackageDir(work.unpackDir(), src, final, limits)
}

func dirHashIs(dir, want string, limits hashing.ZipLimits) bool {
	if want == "" {
		return false
	}
	got, err := hashing.HashPackageDir(dir, limits)
	return err == nil && got == want
}

// CheckFilesystem checks the filesystem view at root against its store,
// as clients read it: each package the store lists must be there, as its
// packed archive with the store's bytes or as its unpacked directory with
// the h1: hash the provenance records. A store without a record of a
// version is verify's to report; its packages are skipped here.
func CheckFilesystem(ctx context.Context, store *Tree, root string, limits hashing.ZipLimits) ([]Problem, error) {
	providers, err := store.Providers(ctx)
	if err != nil {
		return nil, err
	}
	var out []Problem
	for _, p := range providers {
		idx, err := store.ReadIndex(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, raw := range slices.Sorted(maps.Keys(idx.Versions)) {
			v, err := addrs.ParseVersion(raw)
			if err != nil {
				return nil, err
			}
			problems, err := checkFilesystemVersion(ctx, store, root, p, v, limits)
			if err != nil {
				return nil, err
			}
			out = append(out, problems...)
		}
	}
	return out, nil
}

func checkFilesystemVersion(ctx context.Context, store *Tree, root string, p addrs.Provider, v addrs.Version, limits hashing.ZipLimits) ([]Problem, error) {
	doc, err := store.ReadVersion(ctx, p, v)
	if err != nil {
		return nil, err
	}
	prov, err := store.ReadProvenance(ctx, p, v)
	if err != nil {
		return nil, nil
	}
	var out []Problem
	for _, name := range slices.Sorted(maps.Keys(doc.Archives)) {
		plat, err := addrs.ParsePlatform(name)
		if err != nil {
			return nil, err
		}
		a, ok, err := prov.Entry(p, v, plat)
		if !ok || err != nil {
			continue
		}
		stored, _ := store.LocalPath(ArchivePath(p, v, plat))
		if problem := checkFilesystemPackage(root, stored, p, v, plat, a, limits); problem != nil {
			out = append(out, *problem)
		}
	}
	return out, nil
}

// checkFilesystemPackage finds a package as a client of the filesystem
// mirror at root does: the archive, else the unpacked directory. A packed
// archive that is the store's own file (stored, hard-linked) is the bytes
// verify has hashed already: not read again.
func checkFilesystemPackage(root, stored string, p addrs.Provider, v addrs.Version, plat addrs.Platform, a ProvenanceArchive, limits hashing.ZipLimits) *Problem {
	dir := FilesystemDir(p)
	zipRel := filepath.ToSlash(filepath.Join(dir, ArchiveName(p, v, plat)))
	pkgRel := filepath.ToSlash(filepath.Join(dir, v.String(), plat.String()))
	if info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(zipRel))); err == nil {
		if !info.Mode().IsRegular() {
			return &Problem{Path: zipRel, Message: fmt.Sprintf("is a %s, not the archive of %s %s %s", atomicfile.TypeName(info.Mode()), p, v, plat)}
		}
		if same, err := os.Stat(stored); err == nil && os.SameFile(info, same) {
			return nil
		}
		sum, _, err := hashing.HashFile(filepath.Join(root, filepath.FromSlash(zipRel)))
		switch {
		case err != nil:
			return &Problem{Path: zipRel, Message: fmt.Sprintf("cannot be read: %v", err)}
		case hashing.ZH(sum) != a.ZH:
			return &Problem{Path: zipRel, Message: fmt.Sprintf("has checksum %s, but the mirror's store records %s: clients refuse it", hashing.ZH(sum), a.ZH)}
		}
		return nil
	}
	info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(pkgRel)))
	if err != nil || !info.IsDir() {
		return &Problem{Path: pkgRel, Message: fmt.Sprintf("clients of this filesystem mirror find no package of %s %s for %s: neither %s nor this directory is there", p, v, plat, path.Base(zipRel))}
	}
	got, err := hashing.HashPackageDir(filepath.Join(root, filepath.FromSlash(pkgRel)), limits)
	switch {
	case err != nil:
		return &Problem{Path: pkgRel, Message: fmt.Sprintf("cannot be hashed as clients hash it: %v", err)}
	case got != string(a.H1):
		return &Problem{Path: pkgRel, Message: fmt.Sprintf("hashes to %s, but the mirror's store records %s: clients refuse it", got, a.H1)}
	}
	return nil
}

// linkOrCopy makes rel, beneath t, the same file as src: a hard link, or
// an atomic streamed copy where links are not possible. An existing rel
// with the same content stays. Nothing on the way is followed if it is a
// link (see atomicfile.Root).
func linkOrCopy(src string, t *atomicfile.Root, rel string) error {
	if sameContentIn(src, t, rel) {
		return nil
	}
	return t.Place(src, rel, false)
}

// prepareProviderDir creates a provider's directory dir of a filesystem
// mirror at root without following a link, and removes the temporary
// files an interrupted run left in it (the caller holds the lock of the
// tree behind the mirror).
func prepareProviderDir(root, dir string) error {
	t, err := atomicfile.OpenRoot(root)
	if err != nil {
		return err
	}
	defer func() { _ = t.Close() }()
	if err := t.MkdirAll(dir); err != nil {
		return err
	}
	return t.RemoveTemps(dir)
}

// preparePackageDir creates the directories above the package directory
// pkg without following a link, and refuses a link at pkg itself, which
// would otherwise be read through before it is replaced.
func preparePackageDir(t *atomicfile.Root, pkg string) error {
	if err := t.MkdirAll(path.Dir(pkg)); err != nil {
		return err
	}
	return t.RefuseLink(pkg)
}

// sameContentIn reports whether the local file src and rel beneath t are
// the same regular file or hold the same bytes.
func sameContentIn(src string, t *atomicfile.Root, rel string) bool {
	is, err := os.Lstat(src)
	if err != nil || !is.Mode().IsRegular() {
		return false
	}
	ir, err := t.StatFile(rel)
	if err != nil {
		return false
	}
	if os.SameFile(is, ir) {
		return true
	}
	if is.Size() != ir.Size() {
		return false
	}
	sa, _, errA := hashing.HashFile(src) // refuses a link or a device
	sb, errB := hashIn(t, rel)
	return errA == nil && errB == nil && sa == sb
}

// hashIn is the SHA-256 of the regular file rel beneath t.
func hashIn(t *atomicfile.Root, rel string) ([sha256.Size]byte, error) {
	f, err := t.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	defer func() { _ = f.Close() }()
	w := hashing.NewWriter()
	if _, err := io.Copy(w, f); err != nil {
		return [sha256.Size]byte{}, err
	}
	return w.Sum(), nil
}

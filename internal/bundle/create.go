package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/chunkio"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// CreateOptions say what to pack and where.
type CreateOptions struct {
	// Mirror is the mirror to pack, opened for reading over a store that
	// can list its files: a directory's, or a bucket's.
	Mirror    *layout.Tree
	Out       string              // the bundle file, replaced atomically
	LockFiles []LockFile          // .terraform.lock.hcl files to include
	SignKey   *signing.SigningKey // signs manifest.json when set
	// LockTimeout is how long to wait for a build writing the mirror
	// directory.
	LockTimeout time.Duration
	ZipLimits   hashing.ZipLimits // zero fields: hashing.DefaultZipLimits'
	// ModuleLimits bound the mirror's module packages (zero fields:
	// hashing.DefaultModuleLimits'), as a build does.
	ModuleLimits hashing.ModuleLimits
	// Trust decides which releases may be packed: the build's policy.
	Trust mirror.TrustPolicy
	// MaxFileBytes bounds a file copied from a store that is not a
	// directory (a bucket) when its listing does not give its size: the
	// size limit of downloads (settings max_archive_bytes). 0:
	// DefaultMaxFileBytes.
	MaxFileBytes int64
}

// LockFile is a lock file to include as lock-files/NAME/.terraform.lock.hcl.
type LockFile struct {
	Name string // slash-separated relative directory; "" puts it at lock-files/.terraform.lock.hcl
	Path string // the file to read
}

// CreateReport describes a bundle that was written.
type CreateReport struct {
	Out       string
	Providers int
	Versions  int
	Archives  int
	// Modules and ModuleVersions count the module packages bundled.
	Modules        int
	ModuleVersions int
	Files          int   // files in the bundle, besides the manifest and its signature
	Bytes          int64 // their total size
	LockFiles      int
	KeyID          string // the key that signed the manifest, if any
	// Skipped are files in the site that are not part of the mirror (no
	// document refers to them), left out of the bundle.
	Skipped []string
	// Warnings name releases the trust policy accepts with a warning.
	Warnings []string
}

// ErrEmptyMirror means the site holds no provider and no module.
var ErrEmptyMirror = errors.New("the mirror holds no provider and no module (no catalog.json or index.json): nothing to bundle")

// entry is one file to pack: from disk (src) or from memory (data).
type entry struct {
	name string
	src  string
	data []byte
	file File
}

// Create checks opts.Mirror as "tfmirror verify" does, then packs it,
// with the lock files and CLI configuration snippets, into opts.Out. A
// mirror with any problem is refused with a *RefusedError and no bundle
// is written.
//
// A directory's lock is held throughout, so a concurrent build cannot
// change it half-way: the files are verified, hashed and packed where they
// are, and a build could replace one between those reads (a damaged
// archive repaired, a document merged). Any other store is read without a
// lock, through a snapshot (see createFromStore).
func Create(ctx context.Context, opts CreateOptions) (*CreateReport, error) {
	store, ok := opts.Mirror.Reader().(layout.Store)
	if !ok {
		return nil, fmt.Errorf("%s: cannot list the mirror's files: bundle a directory or a bucket", opts.Mirror.Location())
	}
	if _, local := opts.Mirror.LocalPath(""); !local {
		return createFromStore(ctx, opts, store)
	}
	// Refuse a directory that is no mirror before locking it, which
	// would create the private directory in it.
	if opts.Mirror.Empty(ctx) {
		return nil, ErrEmptyMirror
	}
	unlock, err := store.Lock(ctx, opts.LockTimeout, layout.Publish)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unlock() }()
	listing, err := store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	skipped := func(files []string) ([]string, error) { return others(listing, files, opts.Mirror.Location(), true) }
	return pack(ctx, opts, opts.Mirror, "", skipped)
}

// createFromStore packs opts.Mirror, a mirror kept in a store that is not
// a local directory (a bucket). It takes no lock: reading needs none, so
// read-only credentials suffice and no writer is held up. Instead the
// mirror is first copied into a local snapshot next to opts.Out, reading
// every document before the files it names; since publications into a
// store are atomic and in publish order (a file before any document that
// names it), what a copied document lists was already published, and each
// file is read once, so what is verified and hashed is what is packed. A
// file deleted meanwhile (a prune) is missing from the snapshot, and two
// documents of one release copied on either side of a build's merge
// disagree: verification of the snapshot then refuses the mirror (a second
// run packs it). What is packed is always a tree that verifies.
func createFromStore(ctx context.Context, opts CreateOptions, store layout.Store) (*CreateReport, error) {
	dir, err := filepath.Abs(filepath.Dir(opts.Out))
	if err != nil {
		return nil, err
	}
	if err := atomicfile.MkdirAll(dir); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(dir, ".tmp-"+filepath.Base(opts.Out)+"-snapshot-*")
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", store.Location(), err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	snap, err := newSnapshot(store, filepath.Join(work, "mirror"), opts.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	c, err := readContent(ctx, layout.NewTree(snap))
	if err != nil {
		return nil, err
	}
	if len(c.Providers) == 0 && layout.NewTree(snap).Empty(ctx) {
		return nil, ErrEmptyMirror
	}
	local, err := layout.OpenExisting(snap.root)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(work, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	// The snapshot lists the store before it reads documents, which may
	// name files published since.
	skipped := func(files []string) ([]string, error) { return others(snap.listing, files, store.Location(), false) }
	report, err := pack(ctx, opts, local, tmp, skipped)
	var refused *RefusedError
	if errors.As(err, &refused) {
		// Name the store's objects, not their copies.
		for i, p := range refused.Problems {
			refused.Problems[i].Message = strings.ReplaceAll(p.Message, snap.root+string(filepath.Separator), snap.name(""))
		}
	}
	return report, err
}

// pack verifies the local tree, whose files are read where they are, and
// writes the bundle. skipped lists the mirror's files besides files (the
// tree's content), which are left out.
func pack(ctx context.Context, opts CreateOptions, tree *layout.Tree, tempDir string, skipped func(files []string) ([]string, error)) (*CreateReport, error) {
	v := &mirror.Verifier{
		Mirror:  tree,
		Checker: signing.Checker{},
		Trust:   opts.Trust,
		Limits:  opts.ZipLimits,
		// Modules are held to the module limits, not the provider ones.
		ModuleLimits: opts.ModuleLimits,
		TempDir:      tempDir,
		CheckSBOM:    sbom.Check,
	}
	vr, err := v.Verify(ctx)
	if err != nil {
		return nil, err
	}
	if problems := append(slices.Clone(vr.Problems), vr.Warnings...); len(problems) > 0 {
		return nil, refusedAll("mirror", problems)
	}
	if vr.Providers == 0 && vr.Modules == 0 {
		return nil, ErrEmptyMirror
	}
	c, err := readContent(ctx, tree)
	if err != nil {
		return nil, err
	}
	report := &CreateReport{Out: opts.Out, Providers: vr.Providers, Versions: vr.Versions, Archives: vr.Archives, Modules: vr.Modules, ModuleVersions: vr.ModuleVersions, LockFiles: len(opts.LockFiles),
		Warnings: acceptedWarnings(vr)}
	if report.Skipped, err = skipped(c.Files); err != nil {
		return nil, err
	}
	read := func(rel string) ([]byte, error) { return readLimited(localPath(tree, rel), layout.MaxDocumentBytes) }
	if problems := append(documentProblems(c.Files, "", read), changeProblems(ctx, tree, "")...); len(problems) > 0 {
		return nil, refusedAll("mirror", problems)
	}

	entries, err := collectEntries(tree, c, opts.LockFiles)
	if err != nil {
		return nil, err
	}
	m := Manifest{Format: FormatVersion, CreatedBy: createdBy, Files: make([]File, 0, len(entries))}
	for i := range entries {
		if entries[i].file, err = hashEntry(entries[i]); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, entries[i].file)
		report.Bytes += entries[i].file.Size
	}
	report.Files = len(entries)
	manifest, err := encodeManifest(m)
	if err != nil {
		return nil, err
	}
	var sig []byte
	if opts.SignKey != nil {
		if sig, err = opts.SignKey.SignDetached(manifest); err != nil {
			return nil, err
		}
		report.KeyID = opts.SignKey.KeyID()
	}
	if err := writeBundle(ctx, opts.Out, manifest, sig, entries); err != nil {
		return nil, err
	}
	return report, nil
}

// localPath is where a file of a local tree is.
func localPath(tree *layout.Tree, rel string) string {
	p, _ := tree.LocalPath(rel)
	return p
}

// collectEntries lists the bundle's files, sorted by name.
func collectEntries(tree *layout.Tree, c content, lockFiles []LockFile) ([]entry, error) {
	var entries []entry
	for _, rel := range c.Files {
		entries = append(entries, entry{name: MirrorDir + "/" + rel, src: localPath(tree, rel)})
	}
	for _, lf := range lockFiles {
		name := path.Join(LockFilesDir, lf.Name, LockFileName)
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("lock file %s: %w", lf.Path, err)
		}
		data, err := readLockFile(lf.Path)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{name: name, src: lf.Path, data: data})
	}
	for name, data := range cliConfigSnippets(c.Providers, c.Modules) {
		entries = append(entries, entry{name: CLIConfigDir + "/" + name, data: data})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	for i := 1; i < len(entries); i++ {
		if entries[i].name == entries[i-1].name {
			return nil, fmt.Errorf("two files would be bundled as %s (%s and %s)", entries[i].name, entries[i-1].src, entries[i].src)
		}
	}
	return entries, nil
}

// open opens the entry's content: what was read into memory, or the file
// on disk, which must still be a regular file.
func (e entry) open() (io.ReadCloser, error) {
	if e.data != nil || e.src == "" {
		return io.NopCloser(bytes.NewReader(e.data)), nil
	}
	return hashing.OpenRegular(e.src)
}

// readLockFile reads a lock file to bundle: a regular file (a link is not
// followed) of at most maxExtraBytes that OpenTofu reads as a lock file.
// What is packed is the bytes read and checked here.
func readLockFile(file string) ([]byte, error) {
	data, err := readLimited(file, maxExtraBytes)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := parseLockFile(data, file); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", file, err)
	}
	return data, nil
}

func hashEntry(e entry) (File, error) {
	r, err := e.open()
	if err != nil {
		return File{}, err
	}
	defer r.Close()
	w := hashing.NewWriter()
	if _, err := io.Copy(w, r); err != nil {
		return File{}, fmt.Errorf("read %s: %w", e.src, err)
	}
	sum := w.Sum()
	return File{Path: e.name, SHA256: hex.EncodeToString(sum[:]), Size: w.Len()}, nil
}

// others returns the files of listing (every regular file of a store,
// none under a link) that are not in files. With all, it makes sure every
// one of files is in listing: in a directory, a link, or a file under a
// linked directory, is not packed.
func others(listing, files []string, location string, all bool) ([]string, error) {
	in := make(map[string]bool, len(files))
	for _, f := range files {
		in[f] = true
	}
	listed := make(map[string]bool, len(listing))
	var out []string
	for _, f := range listing {
		listed[f] = true
		// The registry replica is the tree's view, which an import
		// writes anew: not a file to report.
		if !in[f] && !strings.HasPrefix(f, replica.Dir+"/") {
			out = append(out, f)
		}
	}
	for _, f := range files {
		if all && !listed[f] {
			return nil, fmt.Errorf("mirror file %s: not a regular file of %s (a symbolic link, or under one): not followed", f, location)
		}
	}
	return out, nil
}

// writeBundle writes the bundle to a temporary file next to out and
// renames it into place. Each file is hashed again as it is packed; a
// file that changed since the manifest was made is an error.
func writeBundle(ctx context.Context, out string, manifest, sig []byte, entries []entry) (err error) {
	dir := filepath.Dir(out)
	if err := atomicfile.MkdirAll(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(out)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	buf := bufio.NewWriterSize(f, 1<<20)
	gz := gzip.NewWriter(buf)
	tw := tar.NewWriter(gz)
	if err := writeData(tw, ManifestName, manifest); err != nil {
		return err
	}
	if sig != nil {
		if err := writeData(tw, SignatureName, sig); err != nil {
			return err
		}
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := writeDirs(tw, dirs, path.Dir(e.name)); err != nil {
			return err
		}
		if err := writeEntry(tw, e); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := buf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := atomicfile.SyncClose(f); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return atomicfile.Rename(f.Name(), out)
}

// epoch is every entry's modification time, so bundles are reproducible.
var epoch = time.Unix(0, 0)

func fileHeader(name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: int64(atomicfile.FileMode), ModTime: epoch}
}

func writeData(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(fileHeader(name, int64(len(data)))); err != nil {
		return fmt.Errorf("pack %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("pack %s: %w", name, err)
	}
	return nil
}

// writeDirs writes the entries of dir and its parents that are not written yet.
func writeDirs(tw *tar.Writer, done map[string]bool, dir string) error {
	if dir == "." || done[dir] {
		return nil
	}
	if err := writeDirs(tw, done, path.Dir(dir)); err != nil {
		return err
	}
	done[dir] = true
	hdr := &tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: int64(atomicfile.DirMode), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("pack %s: %w", dir, err)
	}
	return nil
}

func writeEntry(tw *tar.Writer, e entry) error {
	r, err := e.open()
	if err != nil {
		return err
	}
	defer r.Close()
	if err := tw.WriteHeader(fileHeader(e.name, e.file.Size)); err != nil {
		return fmt.Errorf("pack %s: %w", e.name, err)
	}
	w := hashing.NewWriter()
	n, err := chunkio.Copy(io.MultiWriter(tw, w), io.LimitReader(r, e.file.Size))
	switch {
	case chunkio.IsWrite(err):
		return fmt.Errorf("pack %s: %w", e.name, err) // writing the bundle failed
	case err == nil && n < e.file.Size:
		err = io.ErrUnexpectedEOF
		fallthrough
	case err != nil:
		return fmt.Errorf("pack %s: %w (did it change while the bundle was made?)", e.name, err)
	}
	extra, _ := r.Read(make([]byte, 1))
	sum := w.Sum()
	if extra != 0 || hex.EncodeToString(sum[:]) != e.file.SHA256 {
		return fmt.Errorf("pack %s: %s changed while the bundle was made", e.name, e.src)
	}
	return nil
}

package bundle

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/sbom"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Layout is the shape of the tree Import writes: the build's layouts.
type Layout = layout.Kind

// LayoutNetwork is the network mirror tree "tfmirror build" writes.
const LayoutNetwork = layout.Network

// Layouts are the layouts Import can write. For a filesystem layout the
// network tree the bundle carries goes to DIR/.tfmirror/store and the
// filesystem view is made from it, as a build does; the checks before are
// the same for all.
var Layouts = []Layout{layout.Network, layout.Packed, layout.Unpacked}

// ImportOptions say what to import and where.
type ImportOptions struct {
	Bundle string // the bundle file
	// Out names the destination in the report, as the user named it.
	Out string
	// Into is the destination, opened (a directory or a bucket): merged
	// into under its store's publish lock.
	Into Target
	// TempDir is where a bundle imported into a store that is not a
	// directory is unpacked and checked first; "" means os.TempDir().
	// (For a directory, the bundle is unpacked in its private directory.)
	TempDir string
	// TrustKeys, if set, are the keys the bundle's manifest must be
	// signed by (one of them).
	TrustKeys *signing.TrustedKeys
	// Extras, if set, is a directory that receives the bundle's
	// lock-files/ and cli-config/ once everything is verified and
	// published.
	Extras string
	// LockTimeout is how long to wait for another process writing Out.
	LockTimeout time.Duration
	Limits      Limits            // zero: DefaultLimits
	ZipLimits   hashing.ZipLimits // zero fields: hashing.DefaultZipLimits'
	// ModuleLimits bound the bundle's module packages (zero fields:
	// hashing.DefaultModuleLimits'): the limits a build packs a module
	// under, whatever ZipLimits are, so a bundle brings no module a
	// build would refuse.
	ModuleLimits hashing.ModuleLimits
	// Trust decides which releases the bundle may bring: the same policy
	// as a build, applied to what the bundle keeps of each origin.
	Trust mirror.TrustPolicy
	// Refresh, if set, runs under the destination's lock once the mirror
	// is published: the views derived from the tree (the catalog page, the
	// registry replicas) are brought in step with it.
	Refresh func(ctx context.Context, tree *layout.Tree) error
	// Record, if set, runs under the destination's lock once the mirror
	// is published, before Refresh: the change records, the bundle's
	// (checked before anything was published) and the import's own.
	Record func(ctx context.Context, tree, staged *layout.Tree, report *ImportReport) error
}

// Target is where a bundle is imported: a network tree and its store,
// and for a directory the directory itself.
type Target struct {
	Tree  *layout.Tree
	Store layout.Store
	// Dir is the directory the user named, "" for a store that is not a
	// directory: the bundle is unpacked in its private directory, and a
	// filesystem layout's view is made there.
	Dir string
	// Layout is what Dir holds: the network tree, or a filesystem mirror
	// whose network tree (Tree) is kept in its private directory.
	Layout Layout
}

// ImportReport describes an import that succeeded.
type ImportReport struct {
	Out       string
	Providers int
	Versions  int
	Archives  int
	// Modules and ModuleVersions count the bundle's module packages.
	Modules        int
	ModuleVersions int
	Written        int    // files of Out created or replaced
	Unchanged      int    // files of Out that already had the bundle's content
	KeyID          string // the trusted key that signed the manifest (TrustKeys set)
	// Added are the versions the import added, with their new platforms.
	Added  []layout.ChangedPackage
	Extras int // files written under Extras
	// ExtraLockFiles are those of them that are lock files (the others
	// are CLI configuration snippets).
	ExtraLockFiles int
	Warnings       []string
}

// legacyImportAge is how old a staging directory of an older version's
// import (import-*, in a directory's private directory) must be before
// an import holding the lock removes it as left by a killed run. Those
// imports staged without a lock of their own, so their age is all there
// is to go by; imports now stage in a layout.Workspace, whose runs are
// removed by their locks.
const legacyImportAge = 24 * time.Hour

// importPrefix starts the name of each import's staging directory: under
// opts.TempDir, and (older versions) under a directory's private
// directory.
const importPrefix = "import-"

// Import checks a bundle and, only if every check passes, publishes its
// mirror into opts.Into. A bundle that fails any check is refused with a
// *RefusedError and nothing in the destination changes; so is a bundle
// that would replace a file there with different bytes (archives,
// SHA256SUMS and signatures are immutable: a mismatch means one side was
// tampered with or re-released, and a person must decide).
//
// The bundle is unpacked and checked in a staging directory (for a
// directory, the staging area of a layout.Workspace in its private
// directory, so that publishing is a rename; else a new directory in
// opts.TempDir) without the destination's lock, then published through
// the destination's store under its Publish lock, with the same Refuse
// policy and publish order whatever the store. The staging directory is
// this process's alone: concurrent imports, builds and prunes never
// share or remove it, and a killed import's is removed by the next
// workspace opened there (layout.Workspace says how). An import that
// changes nothing makes no write request into a store that takes its
// lock at the first write. Once the bundle passed its checks, a failure
// comes back with the report too: what was written before it.
func Import(ctx context.Context, opts ImportOptions) (report *ImportReport, err error) {
	if opts.Into.Layout == "" {
		opts.Into.Layout = LayoutNetwork
	}
	opts.Limits = opts.Limits.orDefault()
	in, err := os.Open(opts.Bundle)
	if err != nil {
		return nil, err
	}
	defer func() { _ = in.Close() }()
	staging, cleanup, err := openStaging(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := cleanup(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	report = &ImportReport{Out: opts.Out}
	s, stagedTree, err := check(ctx, in, staging, opts, report)
	if err != nil {
		return nil, naming(err, opts.Bundle)
	}
	unlock, err := opts.Into.Store.Lock(ctx, opts.LockTimeout, layout.Publish)
	if err != nil {
		return report, err
	}
	defer func() {
		if uerr := unlock(); uerr != nil && err == nil {
			err = uerr
		}
	}()
	if opts.Into.Dir != "" {
		removeLegacyImports(filepath.Join(opts.Into.Dir, layout.PrivateDirName))
	}
	if err := publish(ctx, opts.Into.Tree, stagedTree, report); err != nil {
		return report, err
	}
	if opts.Record != nil {
		if err := opts.Record(ctx, opts.Into.Tree, stagedTree, report); err != nil {
			return report, err
		}
	}
	if opts.Refresh != nil {
		if err := opts.Refresh(ctx, opts.Into.Tree); err != nil {
			return report, err
		}
	}
	if err := materialize(ctx, opts); err != nil {
		return report, err
	}
	if err := finishExtras(s, opts, report); err != nil {
		return report, err
	}
	return report, nil
}

// openStaging creates the staging directory: a workspace's staging area
// in a directory's private directory, else a new directory in
// opts.TempDir.
func openStaging(opts ImportOptions) (string, func() error, error) {
	if opts.Into.Dir != "" {
		return prepareStaging(opts.Into.Dir)
	}
	staging, err := os.MkdirTemp(opts.TempDir, "tfmirror-"+importPrefix+"*")
	if err != nil {
		return "", nil, fmt.Errorf("create staging directory: %w", err)
	}
	return staging, func() error {
		if err := os.RemoveAll(staging); err != nil {
			return fmt.Errorf("remove staging directory: %w", err)
		}
		return nil
	}, nil
}

// materialize makes a directory's filesystem view, for a filesystem
// layout.
func materialize(ctx context.Context, opts ImportOptions) error {
	if opts.Into.Layout == LayoutNetwork {
		return nil
	}
	work, err := layout.OpenWorkspace(filepath.Join(layout.StorePath(opts.Into.Dir), layout.PrivateDirName))
	if err != nil {
		return err
	}
	err = layout.Materialize(ctx, opts.Into.Tree, work, opts.Into.Dir, opts.Into.Layout, opts.ZipLimits)
	if cerr := work.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write the %s filesystem mirror: %w", opts.Into.Layout, err)
	}
	return nil
}

// check unpacks the bundle into staging and runs every check on it, so
// that nothing is published unless all pass.
func check(ctx context.Context, in io.Reader, staging string, opts ImportOptions, report *ImportReport) (*staged, *layout.Tree, error) {
	s, err := unpack(ctx, in, staging, opts, report)
	if err != nil {
		return nil, nil, err
	}
	stagedTree, err := checkStaged(ctx, s, opts, report)
	if err != nil {
		return nil, nil, err
	}
	if opts.Extras != "" {
		if err := checkExtras(s, opts.Extras); err != nil {
			return nil, nil, err
		}
	}
	return s, stagedTree, nil
}

// finishExtras writes the bundle's extras, once its mirror is published.
func finishExtras(s *staged, opts ImportOptions, report *ImportReport) error {
	if opts.Extras == "" {
		return nil
	}
	if err := writeExtras(s, opts.Extras, report); err != nil {
		return fmt.Errorf("the mirror was imported, but %w", err)
	}
	return nil
}

// prepareStaging opens a workspace of this process's own in dest's
// private directory (so publishing is a rename on one filesystem),
// creating dest if needed, and returns its staging area. cleanup closes
// the workspace, removing the staging area, and removes the directories
// this created if they are then empty (a refused bundle leaves no
// trace).
func prepareStaging(dest string) (string, func() error, error) {
	private := filepath.Join(dest, layout.PrivateDirName)
	for _, dir := range []string{dest, private} {
		if info, err := os.Lstat(dir); err == nil && !info.IsDir() {
			return "", nil, fmt.Errorf("%s is a %s, not a directory: tfmirror follows no links in a mirror directory", dir, info.Mode().Type())
		}
	}
	var created []string
	for dir := private; ; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		created = append(created, dir)
	}
	removeCreated := func() {
		for _, dir := range created { // deepest first
			_ = os.Remove(dir)
		}
	}
	work, err := layout.OpenWorkspace(private)
	if err != nil {
		removeCreated()
		return "", nil, fmt.Errorf("create staging directory: %w", err)
	}
	return work.StagingDir(), func() error {
		err := work.Close()
		removeCreated()
		if err != nil {
			return fmt.Errorf("remove staging directory: %w", err)
		}
		return nil
	}, nil
}

// removeLegacyImports removes the staging directories older versions'
// imports left in private when they were killed long ago. It runs with
// the destination's lock held.
func removeLegacyImports(private string) {
	entries, err := os.ReadDir(private)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), importPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > legacyImportAge {
			_ = os.RemoveAll(filepath.Join(private, e.Name()))
		}
	}
}

// staged is a bundle unpacked into a staging directory.
type staged struct {
	root     string
	manifest Manifest
}

// path returns where a bundle file was unpacked.
func (s *staged) path(name string) string { return filepath.Join(s.root, filepath.FromSlash(name)) }

// unpack streams the bundle into staging, checking every entry against
// the manifest as it goes. What it decompresses is bounded by what the
// manifest declares, so a compression bomb is refused early.
func unpack(ctx context.Context, in io.Reader, staging string, opts ImportOptions, report *ImportReport) (*staged, error) {
	compressed := &counter{r: bufio.NewReaderSize(in, 1<<20)}
	gz, err := gzip.NewReader(compressed)
	if err != nil {
		return nil, refused("", "not a gzip-compressed bundle: %v", err)
	}
	stream := &inflation{r: gz, compressed: compressed, limit: manifestBound()}
	tr := tar.NewReader(stream)
	data, m, err := readManifest(tr, opts.Limits)
	if err != nil {
		return nil, err
	}
	u := newUnpacker(&staged{root: staging, manifest: m})
	stream.declare(declaredRest(m, u.dirs))
	hdr, err := next(tr)
	var sig []byte
	if err == nil && hdr.Name == SignatureName && hdr.Typeflag == tar.TypeReg {
		if sig, err = readSmall(tr, hdr, maxSignatureBytes); err != nil {
			return nil, err
		}
		hdr, err = next(tr)
	}
	if err := checkSignature(data, sig, opts.TrustKeys, report); err != nil {
		return nil, err
	}
	if err := u.entries(ctx, tr, hdr, err); err != nil {
		return nil, err
	}
	if err := checkTrailer(stream); err != nil {
		return nil, err
	}
	return u.s, u.finish()
}

// readManifest reads and decodes the first entry, manifest.json.
func readManifest(tr *tar.Reader, limits Limits) ([]byte, Manifest, error) {
	hdr, err := next(tr)
	if isInflation(err) {
		return nil, Manifest{}, damaged("", err)
	}
	if err != nil {
		return nil, Manifest{}, refused("", "not a tar archive: %v", err)
	}
	if hdr.Name != ManifestName || hdr.Typeflag != tar.TypeReg {
		return nil, Manifest{}, refused(hdr.Name, "the first entry must be the file %s", ManifestName)
	}
	data, err := readSmall(tr, hdr, maxManifestBytes)
	if err != nil {
		return nil, Manifest{}, err
	}
	m, err := decodeManifest(data, limits)
	if err != nil {
		return nil, Manifest{}, refused(ManifestName, "%v", err)
	}
	return data, m, nil
}

// damaged refuses a bundle whose stream failed at entry name.
func damaged(name string, err error) error {
	switch {
	case isInflation(err):
		return refused("", "%v", err)
	case errors.Is(err, io.ErrUnexpectedEOF) && name != "":
		return refused("", "the file ends early, inside %s, or has bytes after its end (unexpected EOF): copy the bundle again", name)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return refused("", "the file ends early or has bytes after its end (unexpected EOF): copy the bundle again")
	}
	return refused(name, "damaged: %v", err)
}

// next returns the next entry. Names the tar package calls insecure are
// returned too: Import's own checks refuse them, with a clearer message.
func next(tr *tar.Reader) (*tar.Header, error) {
	hdr, err := tr.Next()
	if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
		return hdr, nil
	}
	return hdr, err
}

func readSmall(tr *tar.Reader, hdr *tar.Header, limit int64) ([]byte, error) {
	if hdr.Size < 0 || hdr.Size > limit {
		return nil, refused(hdr.Name, "larger than the limit of %d bytes", limit)
	}
	data := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, data); err != nil {
		return nil, damaged(hdr.Name, err)
	}
	return data, nil
}

// checkSignature checks the manifest's signature when trusted keys are
// given. Without them, a signature is not checked, and the report says so.
func checkSignature(manifest, sig []byte, trusted *signing.TrustedKeys, report *ImportReport) error {
	if trusted == nil {
		if sig != nil {
			report.Warnings = append(report.Warnings, "the bundle is signed, but no trusted key was given: the signature was not checked")
		}
		return nil
	}
	if sig == nil {
		return refused(SignatureName, "missing: the bundle is not signed, and a trusted key was given")
	}
	signer, err := trusted.VerifyDetached(manifest, sig)
	if err != nil {
		return refused(SignatureName, "does not verify with the trusted keys: %v", err)
	}
	report.KeyID = signer.KeyID
	return nil
}

// checkTrailer reads what follows the tar's end, which must be zero
// padding, to the end of the gzip stream (so its checksum is verified).
func checkTrailer(gz io.Reader) error {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := gz.Read(buf)
		for _, b := range buf[:k] {
			if b != 0 {
				return refused("", "data after the end of the tar archive")
			}
		}
		if n += int64(k); n > maxTrailingBytes {
			return refused("", "more than %d bytes after the end of the tar archive", maxTrailingBytes)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return damaged("", err)
		}
	}
}

type unpacker struct {
	s        *staged
	listed   map[string]File
	dirs     map[string]bool // every parent directory of a listed file
	seen     map[string]bool
	problems []mirror.Problem // content mismatches, collected
}

func newUnpacker(s *staged) *unpacker {
	u := &unpacker{s: s, listed: map[string]File{}, dirs: map[string]bool{}, seen: map[string]bool{}}
	for _, f := range s.manifest.Files {
		u.listed[f.Path] = f
		for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
			u.dirs[d] = true
		}
	}
	return u
}

// entries unpacks the entries after the manifest and its signature, from
// hdr (and err, from reading it) on. Each entry must be a listed file or
// a parent directory of one, once, so there are no more entries than the
// manifest's limits allow.
func (u *unpacker) entries(ctx context.Context, tr *tar.Reader, hdr *tar.Header, err error) error {
	for ; ; hdr, err = next(tr) {
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return damaged("", err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := u.entry(tr, hdr); err != nil {
			return err
		}
	}
}

// finish refuses the bundle if a file did not match or was missing.
func (u *unpacker) finish() error {
	for _, f := range u.s.manifest.Files {
		if !u.seen[f.Path] {
			u.problems = append(u.problems, mirror.Problem{Path: f.Path, Message: "listed in the manifest, but not in the bundle"})
		}
	}
	if len(u.problems) > 0 {
		return refusedAll("bundle", u.problems)
	}
	return nil
}

// entry checks one tar entry and unpacks it. Structural problems refuse
// the bundle at once; a file whose content does not match is recorded and
// unpacking goes on, so every such file is reported.
func (u *unpacker) entry(tr *tar.Reader, hdr *tar.Header) error {
	name, err := u.check(hdr)
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if !u.dirs[name] {
			return refused(name, "a directory that holds no file listed in the manifest")
		}
		if hdr.Size != 0 {
			return refused(name, "a directory entry with %d bytes of content", hdr.Size)
		}
		if err := os.MkdirAll(u.s.path(name), 0o755); err != nil {
			return refused(name, "cannot be unpacked: %v", err)
		}
		return nil
	case tar.TypeReg:
		f, ok := u.listed[name]
		if !ok {
			return refused(name, "not listed in the manifest")
		}
		if hdr.Size != f.Size {
			return refused(name, "is %d bytes, the manifest says %d", hdr.Size, f.Size)
		}
		return u.file(tr, f)
	default:
		return refused(name, "is a %s; only regular files and directories are allowed", typeName(hdr.Typeflag))
	}
}

// check checks an entry's name, that it appears once, and that it is no
// sparse file (whose holes would unpack to more than the bundle holds).
func (u *unpacker) check(hdr *tar.Header) (string, error) {
	name := hdr.Name
	if hdr.Typeflag == tar.TypeDir {
		name = strings.TrimSuffix(name, "/")
	}
	if err := checkName(name); err != nil {
		return "", refused(strconv.Quote(hdr.Name), "%v", err)
	}
	if name == ManifestName || name == SignatureName {
		return "", refused(name, "appears again after the start of the bundle")
	}
	if u.seen[name] {
		return "", refused(name, "appears twice in the bundle")
	}
	u.seen[name] = true
	for key := range hdr.PAXRecords {
		if strings.HasPrefix(key, "GNU.sparse.") {
			return "", refused(name, "is a sparse file; only regular files and directories are allowed")
		}
	}
	return name, nil
}

func (u *unpacker) file(tr *tar.Reader, f File) error {
	dst := u.s.path(f.Path)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return refused(f.Path, "cannot be unpacked: %v", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, atomicfile.FileMode)
	if errors.Is(err, fs.ErrExist) {
		return refused(f.Path, "clashes with another entry (names that differ only in case or normalization?)")
	}
	if err != nil {
		return fmt.Errorf("unpack %s: %w", f.Path, err)
	}
	w := hashing.NewWriter()
	_, err = io.Copy(io.MultiWriter(out, w), tr)
	if err != nil {
		_ = out.Close()
		if errors.Is(err, io.ErrUnexpectedEOF) || isFormatError(err) || isInflation(err) {
			return damaged(f.Path, err)
		}
		return fmt.Errorf("unpack %s: %w", f.Path, err)
	}
	if err := atomicfile.SyncClose(out); err != nil {
		return fmt.Errorf("unpack %s: %w", f.Path, err)
	}
	if sum := w.Sum(); hex.EncodeToString(sum[:]) != f.SHA256 {
		u.problems = append(u.problems, mirror.Problem{Path: f.Path, Message: fmt.Sprintf("SHA-256 is %x, the manifest says %s", sum, f.SHA256)})
	}
	return nil
}

// isFormatError reports errors of a damaged gzip or tar stream.
func isFormatError(err error) bool {
	return errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, tar.ErrHeader) ||
		strings.Contains(err.Error(), "flate: corrupt input")
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "named pipe"
	case tar.TypeXGlobalHeader:
		return "global PAX header"
	}
	return fmt.Sprintf("entry of type %q", t)
}

// checkStaged checks that every document of the unpacked mirror is
// canonical and every lock file parses, verifies the mirror as "tfmirror
// verify" does, under the trust policy, and makes sure it holds nothing
// else.
func checkStaged(ctx context.Context, s *staged, opts ImportOptions, report *ImportReport) (*layout.Tree, error) {
	hasMirror := slices.ContainsFunc(s.manifest.Files, func(f File) bool { return strings.HasPrefix(f.Path, MirrorDir+"/") })
	if !hasMirror {
		return nil, refused(MirrorDir, "the bundle holds no mirror")
	}
	if problems := stagedProblems(s); len(problems) > 0 {
		return nil, refusedAll("bundle", problems)
	}
	tree, err := layout.OpenExisting(s.path(MirrorDir))
	if err != nil {
		return nil, err
	}
	v := &mirror.Verifier{Mirror: tree, Checker: signing.Checker{}, Trust: opts.Trust, Limits: opts.ZipLimits, ModuleLimits: opts.ModuleLimits, TempDir: s.root, CheckSBOM: sbom.Check}
	if opts.Into.Tree != nil {
		v.Held = opts.Into.Tree // a new key is judged against the destination's releases too
	}
	vr, err := v.Verify(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, refused(MirrorDir, "%v", err)
	}
	var problems []mirror.Problem
	for _, p := range append(slices.Clone(vr.Problems), vr.Warnings...) {
		problems = append(problems, mirror.Problem{Path: MirrorDir + "/" + p.Path, Message: p.Message})
	}
	if len(problems) > 0 {
		return nil, refusedAll("bundle", problems)
	}
	if vr.Providers == 0 && vr.Modules == 0 {
		return nil, refused(MirrorDir, "the bundle's mirror holds no provider and no module")
	}
	if problems := changeProblems(ctx, tree, MirrorDir+"/"); len(problems) > 0 {
		return nil, refusedAll("bundle", problems)
	}
	c, err := readContent(ctx, tree)
	if err != nil {
		return nil, refused(MirrorDir, "%v", err)
	}
	in := make(map[string]bool, len(c.Files))
	for _, f := range c.Files {
		in[f] = true
	}
	for _, f := range s.manifest.Files {
		if rel, ok := strings.CutPrefix(f.Path, MirrorDir+"/"); ok && !in[rel] {
			problems = append(problems, mirror.Problem{Path: f.Path, Message: "not part of the mirror: no catalog.json, index.json or version document refers to it"})
		}
	}
	if len(problems) > 0 {
		return nil, refusedAll("bundle", problems)
	}
	report.Providers, report.Versions, report.Archives = vr.Providers, vr.Versions, vr.Archives
	report.Modules, report.ModuleVersions = vr.Modules, vr.ModuleVersions
	report.Warnings = append(report.Warnings, acceptedWarnings(vr)...)
	return tree, nil
}

// acceptedWarnings says which releases the trust policy accepted with a
// warning.
func acceptedWarnings(vr *mirror.VerifyReport) []string {
	var out []string
	for _, a := range vr.Accepted {
		out = append(out, a.Message)
	}
	return out
}

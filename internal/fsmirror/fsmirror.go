// Package fsmirror reads a filesystem mirror, the directory OpenTofu's
// filesystem_mirror installs from, as an upstream of a build: packed
// (HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip) and
// unpacked (HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/) layouts, with host
// directories named as OpenTofu names them (Unicode) or in their ASCII
// (punycode) form.
//
// A filesystem mirror keeps no hashes and no signature: what it holds is
// vouched for by itself alone. The Reader gives the build the SHA-256 of
// each archive (an unpacked package is packed into a zip whose bytes
// depend only on its content, hashing.PackModule), and mirror.HashedSource
// marks it as hashes only for the trust policy to accept or refuse. It
// treats the directory as hostile: it follows no link out of it, reads
// only regular files and bounds what it lists and packs.
//
// It does not decide trust (mirror does) and does not write anything.
package fsmirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// maxListing bounds the entries read from one provider's directory.
const maxListing = 100_000

// Reader reads one filesystem mirror directory.
type Reader struct {
	root *os.Root
	dir  string
	// Pack bounds what an unpacked package may hold.
	pack hashing.ModuleLimits
}

var _ mirror.HashedPackages = (*Reader)(nil)

// Open opens the filesystem mirror at dir; limits bound what an unpacked
// package may hold (a zero field: hashing.DefaultZipLimits').
func Open(dir string, limits hashing.ZipLimits) (*Reader, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open filesystem mirror: %w", err)
	}
	limits = limits.WithDefaults()
	return &Reader{root: root, dir: dir, pack: hashing.ModuleLimits{MaxFiles: limits.MaxEntries, MaxBytes: limits.MaxUnpackedBytes}}, nil
}

// Close releases the directory.
func (r *Reader) Close() error { return r.root.Close() }

// Location names the mirror in messages.
func (r *Reader) Location() string { return r.dir }

// entry is one package a provider's directory holds.
type entry struct {
	version addrs.Version
	plat    addrs.Platform
	rel     string // slash-separated, relative to the mirror's root
	packed  bool
}

// Versions lists the versions held of p, packed or unpacked.
func (r *Reader) Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error) {
	entries, err := r.entries(p)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out addrs.VersionList
	for _, e := range entries {
		if !seen[e.version.String()] {
			seen[e.version.String()] = true
			out = append(out, e.version)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no package of %s: %w", r.dir, p, layout.ErrNotInMirror)
	}
	return out, nil
}

// Describe finds the package and hashes it: the zip as it is, or the
// unpacked directory as the zip it packs into.
func (r *Reader) Describe(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (mirror.HashedPackage, error) {
	entries, err := r.entries(p)
	if err != nil {
		return mirror.HashedPackage{}, err
	}
	for _, e := range entries {
		if !e.version.Same(v) || e.plat != plat {
			continue
		}
		h := hashing.NewWriter()
		if err := r.copy(ctx, e, h); err != nil {
			return mirror.HashedPackage{}, err
		}
		return mirror.HashedPackage{Ref: e.ref(), Hashes: []hashing.Hash{hashing.ZH(h.Sum())}, Size: h.Len()}, nil
	}
	return mirror.HashedPackage{}, fmt.Errorf("%s holds no %s package of %s %s: %w", r.dir, plat, p, v, mirror.ErrPlatformUnavailable)
}

// Platforms lists the platforms held of a version, packed or unpacked.
func (r *Reader) Platforms(ctx context.Context, p addrs.Provider, v addrs.Version) ([]addrs.Platform, error) {
	entries, err := r.entries(p)
	if err != nil {
		return nil, err
	}
	var out []addrs.Platform
	for _, e := range entries {
		if e.version.Same(v) && !slices.Contains(out, e.plat) {
			out = append(out, e.plat)
		}
	}
	slices.SortFunc(out, func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Fetch copies the package named by ref into sink, packing an unpacked
// one again (into the same bytes, unless the directory changed, which the
// build's digest check then refuses).
func (r *Reader) Fetch(ctx context.Context, ref string, sink mirror.Sink) error {
	kind, rel, ok := strings.Cut(ref, ":")
	if !ok || (kind != "packed" && kind != "unpacked") || !fs.ValidPath(rel) {
		return fmt.Errorf("%s: %q names no package of this filesystem mirror", r.dir, ref)
	}
	return r.copy(ctx, entry{rel: rel, packed: kind == "packed"}, sinkWriter{sink})
}

func (e entry) ref() string {
	if e.packed {
		return "packed:" + e.rel
	}
	return "unpacked:" + e.rel
}

// sinkWriter hides a Sink's Reset from io.Copy, and keeps its Limit.
type sinkWriter struct{ mirror.Sink }

// copy writes the package's zip to w: a sink's limit holds.
func (r *Reader) copy(ctx context.Context, e entry, w io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sink, isSink := w.(sinkWriter)
	if e.packed {
		f, err := r.openRegular(e.rel)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // read-only
		if isSink {
			return wrapErr(r.dir, e.rel, mirror.CopyArchive(sink.Sink, f))
		}
		_, err = io.Copy(w, f)
		return wrapErr(r.dir, e.rel, err)
	}
	if isSink {
		w = limitWriter(sink.Sink)
	}
	_, err := hashing.PackModule(filepath.Join(r.dir, filepath.FromSlash(e.rel)), w, r.pack)
	return wrapErr(r.dir, e.rel, err)
}

func wrapErr(dir, rel string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("filesystem mirror %s: %s: %w", dir, rel, err)
}

// openRegular opens a regular file inside the root, following no link
// out of it.
func (r *Reader) openRegular(rel string) (*os.File, error) {
	info, err := r.root.Lstat(rel)
	if err != nil {
		return nil, fmt.Errorf("filesystem mirror %s: %w", r.dir, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("filesystem mirror %s: %s is a %s, not a regular file", r.dir, rel, atomicfile.TypeName(info.Mode()))
	}
	f, err := r.root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("filesystem mirror %s: %w", r.dir, err)
	}
	return f, nil
}

// entries lists the packages of p, from the first host directory that
// exists: the Unicode name OpenTofu uses, then the ASCII one.
func (r *Reader) entries(p addrs.Provider) ([]entry, error) {
	for _, host := range hostDirs(p.Hostname) {
		dir := path.Join(host, p.Namespace, p.Type)
		names, err := r.list(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return r.parse(p, dir, names)
	}
	return nil, fmt.Errorf("%s holds no directory for %s: %w", r.dir, p, layout.ErrNotInMirror)
}

func hostDirs(h addrs.Hostname) []string {
	if display := h.ForDisplay(); display != h.String() {
		return []string{display, h.String()}
	}
	return []string{h.String()}
}

// list reads a directory's entries, refusing a link and a listing too
// long to be a mirror's.
func (r *Reader) list(dir string) ([]fs.DirEntry, error) {
	// Every level, so that no link leads the packer out of the mirror.
	parts := strings.Split(dir, "/")
	for i := range parts {
		sub := path.Join(parts[:i+1]...)
		info, err := r.root.Lstat(sub)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("filesystem mirror %s: %s is a %s, not a directory", r.dir, sub, atomicfile.TypeName(info.Mode()))
		}
	}
	f, err := r.root.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("filesystem mirror %s: %w", r.dir, err)
	}
	defer func() { _ = f.Close() }() // read-only
	names, err := f.ReadDir(maxListing + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("filesystem mirror %s: read %s: %w", r.dir, dir, err)
	}
	if len(names) > maxListing {
		return nil, fmt.Errorf("filesystem mirror %s: %s holds more than %d entries", r.dir, dir, maxListing)
	}
	return names, nil
}

// parse reads a provider directory as OpenTofu does: packed zips named
// terraform-provider-TYPE_VERSION_OS_ARCH.zip (case aside; other files
// are ignored), and VERSION/OS_ARCH/ directories.
func (r *Reader) parse(p addrs.Provider, dir string, names []fs.DirEntry) ([]entry, error) {
	var out []entry
	prefix := "terraform-provider-" + p.Type + "_"
	for _, d := range names {
		name := d.Name()
		if d.Type().IsRegular() {
			lower := strings.ToLower(name)
			if rest, ok := strings.CutPrefix(lower, prefix); ok && strings.HasSuffix(lower, ".zip") {
				if e, ok := packedEntry(strings.TrimSuffix(rest, ".zip")); ok {
					e.rel = path.Join(dir, name)
					out = append(out, e)
				}
			}
			continue
		}
		v, err := addrs.ParseVersion(name)
		if !d.IsDir() || err != nil {
			continue
		}
		plats, err := r.list(path.Join(dir, name))
		if err != nil {
			return nil, err
		}
		for _, pd := range plats {
			plat, err := addrs.ParsePlatform(pd.Name())
			if pd.IsDir() && err == nil {
				out = append(out, entry{version: v, plat: plat, rel: path.Join(dir, name, pd.Name())})
			}
		}
	}
	return out, nil
}

// packedEntry parses VERSION_OS_ARCH; extra parts are ignored, as
// OpenTofu ignores them.
func packedEntry(s string) (entry, bool) {
	parts := strings.Split(s, "_")
	if len(parts) < 3 {
		return entry{}, false
	}
	v, err := addrs.ParseVersion(parts[0])
	if err != nil {
		return entry{}, false
	}
	plat, err := addrs.ParsePlatform(parts[1] + "_" + parts[2])
	if err != nil {
		return entry{}, false
	}
	return entry{version: v, plat: plat, packed: true}, true
}

// limitWriter refuses to write more than the sink takes.
func limitWriter(s mirror.Sink) io.Writer {
	l, ok := s.(interface{ Limit() int64 })
	if !ok || l.Limit() <= 0 {
		return s
	}
	return &capped{w: s, left: l.Limit()}
}

type capped struct {
	w    io.Writer
	left int64
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		return 0, mirror.ErrTooLarge
	}
	c.left -= int64(len(p))
	return c.w.Write(p)
}

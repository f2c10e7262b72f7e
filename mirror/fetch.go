package mirror

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/layout"
)

// fetched is the outcome of fetching one archive.
type fetched struct {
	pkg     Package
	archive layout.Archive
	status  Status
	size    int64
	keyID   string
	err     error

	limits hashing.ZipLimits

	// For the provenance record:
	origin     *origin
	keys       []string
	filename   string
	h1Unpacked hashing.Hash
}

// fetchPackage makes one verified archive available for publishing: the one
// already in the tree if its bytes are what SHA256SUMS promises, otherwise a
// fresh download into staging that must hash to the promised digest.
func (b *Builder) fetchPackage(ctx context.Context, a authenticated) fetched {
	f := b.obtain(ctx, a)
	if f.err != nil && f.archive.Staged != "" {
		_ = os.Remove(f.archive.Staged)
	}
	return f
}

// obtain finds or downloads the archive, then hashes it, each step in its
// own pool: downloads are bounded by Parallel, hashing by HashParallel.
func (b *Builder) obtain(ctx context.Context, a authenticated) fetched {
	f := fetched{pkg: a.pkg, limits: b.zipLimits(), keyID: a.origin.signer.KeyID, origin: a.origin, keys: a.meta.SigningKeys, filename: a.meta.Filename}
	final := b.Tree.Path(layout.ArchivePath(a.pkg.Provider, a.pkg.Version, a.pkg.Platform))
	release, err := slot(ctx, b.hashes)
	if err != nil {
		f.err = &PackageError{Package: a.pkg, Err: err}
		return f
	}
	size, same := sameFile(final, a.meta.SHA256)
	if same {
		f.status, f.size = StatusPresent, size
		f.describe(a, final, "")
	}
	release()
	if same {
		return f
	}
	staged, size, err := b.download(ctx, a)
	if err != nil {
		f.err = err
		return f
	}
	f.status, f.size = StatusMirrored, size
	if release, err = slot(ctx, b.hashes); err != nil {
		f.err = &PackageError{Package: a.pkg, Err: err}
		f.archive.Staged = staged
		return f
	}
	defer release()
	f.describe(a, staged, staged)
	if f.err != nil {
		f.archive.Staged = staged
	}
	return f
}

// sameFile reports whether the file at path exists with the given SHA-256.
func sameFile(path string, want [sha256.Size]byte) (int64, bool) {
	file, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	w := hashing.NewWriter()
	_, err = io.Copy(w, file)
	_ = file.Close() // read-only
	if err != nil {
		return 0, false
	}
	return w.Len(), w.Sum() == want
}

// download fetches the archive into staging, hashing it on the way, and
// refuses it unless its digest is the one SHA256SUMS and the registry gave.
func (b *Builder) download(ctx context.Context, a authenticated) (string, int64, error) {
	release, err := slot(ctx, b.downloads)
	if err != nil {
		return "", 0, &PackageError{Package: a.pkg, Err: err}
	}
	defer release()
	file, err := b.Tree.CreateStaged(a.meta.Filename)
	if err != nil {
		return "", 0, &PackageError{Package: a.pkg, Err: err}
	}
	b.started(a.pkg)
	sink := &stagingSink{file: file, hash: hashing.NewWriter(), counter: &b.bytes}
	err = b.Source.Fetch(ctx, a.meta.DownloadURL, sink)
	if err == nil {
		err = layout.SyncClose(file)
	} else {
		_ = file.Close()
	}
	if err != nil {
		_ = os.Remove(file.Name())
		return "", 0, &PackageError{Package: a.pkg, Err: fmt.Errorf("download %s: %w", a.meta.DownloadURL.Redacted(), err)}
	}
	w := sink.hash
	if got := w.Sum(); got != a.meta.SHA256 {
		_ = os.Remove(file.Name())
		return "", 0, &VerificationError{Package: a.pkg, Problem: fmt.Sprintf(
			"archive has checksum %s, but SHA256SUMS and the registry promise %s", hashing.ZH(got), hashing.ZH(a.meta.SHA256))}
	}
	return file.Name(), w.Len(), nil
}

// describe computes the hashes a mirror publishes for a verified archive.
func (f *fetched) describe(a authenticated, path, staged string) {
	sums, err := hashing.HashArchive(path, a.meta.SHA256, f.limits)
	if err != nil {
		f.err = &VerificationError{Package: a.pkg, Problem: "archive refused", Err: err}
		return
	}
	f.archive = layout.Archive{Platform: a.pkg.Platform, Staged: staged, Hashes: sums.All()}
	f.h1Unpacked = sums.H1Unpacked
}

// stagingSink writes a download to a staging file and hashes it on the way.
type stagingSink struct {
	file    *os.File
	hash    *hashing.Writer
	counter *atomic.Int64 // the build's downloaded bytes
}

func (s *stagingSink) Write(p []byte) (int, error) {
	n, err := s.file.Write(p)
	_, _ = s.hash.Write(p[:n])
	s.counter.Add(int64(n))
	return n, err
}

// Reset empties the file and restarts the hash.
func (s *stagingSink) Reset() error {
	if err := s.file.Truncate(0); err != nil {
		return err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s.hash = hashing.NewWriter()
	return nil
}

func (b *Builder) zipLimits() hashing.ZipLimits {
	if b.Options.ZipLimits == (hashing.ZipLimits{}) {
		return hashing.DefaultZipLimits
	}
	return b.Options.ZipLimits
}

func (b *Builder) started(pkg Package) {
	if b.Options.OnEvent == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Options.OnEvent(Event{Started: &pkg})
}

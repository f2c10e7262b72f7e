package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync/atomic"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/layout"
)

// fetched is the outcome of fetching one archive.
type fetched struct {
	pkg     Package
	archive layout.Archive
	status  Status
	size    int64
	keyID   string
	hashes  string // the upstream whose hashes alone vouched, if so
	err     error

	limits hashing.ZipLimits

	// For the provenance record:
	origin     *origin
	keys       []string
	filename   string
	h1Unpacked hashing.Hash
	digest     [sha256.Size]byte // the archive's SHA-256
	goVersion  string            // of the executable's build information
	program    hashing.Program   // what the executable says it was built from
	advisories []Advisory
	advised    bool // the advisor looked at it
	catalog    *layout.CatalogVouch
}

// fetchPackage makes one verified archive available for publishing: the one
// already in the tree if its bytes are what SHA256SUMS promises, otherwise a
// fresh download into staging that must hash to the promised digest.
func (b *Builder) fetchPackage(ctx context.Context, a authenticated) fetched {
	f := b.obtain(ctx, a)
	if f.err == nil {
		f.advise(ctx, b.Options.Advise)
	}
	if f.err != nil {
		b.Work.Discard(f.archive.Staged)
	}
	return f
}

// obtain finds or downloads the archive, then hashes it, each step in its
// own pool: downloads are bounded by Parallel, hashing by HashParallel.
func (b *Builder) obtain(ctx context.Context, a authenticated) fetched {
	f := fetched{pkg: a.pkg, limits: b.zipLimits(), keyID: a.origin.signer.KeyID, hashes: a.origin.hashesOnly, origin: a.origin, keys: a.meta.SigningKeys, filename: a.meta.Filename, catalog: a.meta.Catalog}
	release, err := b.hashSlot(ctx)
	if err != nil {
		f.err = &PackageError{Package: a.pkg, Err: err}
		return f
	}
	final, size, same := b.localCopy(a.pkg, a.meta)
	if same {
		f.status, f.size = StatusPresent, size
		f.describe(a, final, final, nil, b.Options.Describe)
	}
	release()
	if same {
		return f
	}
	staged, size, streamed, err := b.download(ctx, a)
	if err != nil {
		f.err = err
		return f
	}
	a.meta.SHA256 = streamed.digest
	f.status, f.size = StatusMirrored, size
	if release, err = b.hashSlot(ctx); err != nil {
		f.err = &PackageError{Package: a.pkg, Err: err}
		f.archive.Staged = staged
		return f
	}
	defer release()
	f.describe(a, staged, staged, streamed.entries, b.Options.Describe)
	if streamed.entries != nil && streamed.entries.Summarized {
		b.summarized.Add(1)
	}
	if f.err != nil {
		f.archive.Staged = staged
	}
	return f
}

// localCopy finds the archive in a destination on the local filesystem
// with the bytes SHA256SUMS promises, so it is published from there
// without a download. An upstream that promised no digest gets none.
func (b *Builder) localCopy(pkg Package, meta PackageMeta) (string, int64, bool) {
	if !meta.digestKnown() {
		return "", 0, false
	}
	want := meta.SHA256
	for _, d := range b.Dests {
		local, ok := d.(localArchiver)
		if !ok {
			continue
		}
		if path, ok := local.LocalArchive(pkg.Provider, pkg.Version, pkg.Platform); ok {
			if sum, size, err := hashing.HashFile(path); err == nil && sum == want {
				return path, size, true
			}
		}
	}
	return "", 0, false
}

// download fetches the archive, hashing it on the way, and refuses it
// unless its digest is the one SHA256SUMS and the registry gave. It
// resumes a partial download an interrupted run left behind; a failed
// transfer stays there for the next run, a wrong digest or a body longer
// than the registry announced (or the source allows) does not, and
// nothing past that length is written.
//
// The entries are hashed on the way too (hashing.StreamHasher), in turns
// with other hashing (the hash slots), so that the archive's h1: hashes
// are ready when its last byte arrives; the result is for describe.
//
// An upstream of hashes only may promise no digest (it lists h1: hashes
// alone): the download is then checked by describe, and is not resumed.
func (b *Builder) download(ctx context.Context, a authenticated) (string, int64, downloaded, error) {
	var none downloaded
	release, err := slot(ctx, b.downloads)
	if err != nil {
		return "", 0, none, &PackageError{Package: a.pkg, Err: err}
	}
	defer release()
	sink, keep, err := b.openSink(ctx, a)
	if err != nil {
		return "", 0, none, &PackageError{Package: a.pkg, Err: err}
	}
	defer sink.done()
	defer sink.stream.Abandon("the download failed") // unless closed first
	sink.limit = a.meta.Size
	b.started(a.pkg)
	resumed := sink.Written() > 0
	err = a.meta.Archive.Fetch(ctx, sink)
	if err == nil && resumed && sink.hash.Sum() != a.meta.SHA256 { // resumed: the digest is known
		// The partial download of an earlier run was bad: start over once.
		if err = sink.Reset(); err == nil {
			err = a.meta.Archive.Fetch(ctx, sink)
		}
	}
	if err == nil {
		err = atomicfile.SyncClose(sink.file)
	} else {
		_ = sink.file.Close()
	}
	if err != nil {
		if !keep || errors.Is(err, ErrTooLarge) {
			_ = os.Remove(sink.file.Name())
		}
		return "", 0, none, &PackageError{Package: a.pkg, Err: downloadError(a.meta, err)}
	}
	if got := sink.hash.Sum(); a.meta.digestKnown() && got != a.meta.SHA256 {
		_ = os.Remove(sink.file.Name())
		promise := "SHA256SUMS and the registry promise"
		if a.meta.HashesOnly != "" {
			promise = a.meta.HashesOnly + " lists"
		}
		return "", 0, none, &VerificationError{Package: a.pkg, Problem: fmt.Sprintf(
			"archive has checksum %s, but %s %s", hashing.ZH(got), promise, hashing.ZH(a.meta.SHA256))}
	}
	streamed := downloaded{digest: sink.hash.Sum(), entries: sink.stream.Close()}
	if !keep {
		return sink.file.Name(), sink.hash.Len(), streamed, nil
	}
	// A complete partial download becomes this package's own staged
	// file: other platforms with the same bytes must not share it.
	staged, err := b.Work.Stage(sink.file.Name(), a.meta.Filename)
	if err != nil {
		return "", 0, none, &PackageError{Package: a.pkg, Err: err}
	}
	return staged, sink.hash.Len(), streamed, nil
}

// downloaded is what a download learned of the archive on the way.
type downloaded struct {
	digest  [sha256.Size]byte
	entries *hashing.StreamResult // nil when the entries were not followed
}

// downloadError is a failed download of the package meta describes. The
// location's error names it as it may be shown, so this does not.
func downloadError(meta PackageMeta, err error) error {
	if errors.Is(err, ErrTooLarge) && meta.Size > 0 {
		return fmt.Errorf("download %s (the registry announced %d bytes): %w", meta.Filename, meta.Size, err)
	}
	return fmt.Errorf("download %s: %w", meta.Filename, err)
}

// openSink opens the partial download for the archive's digest, re-hashing
// what it already holds, or a fresh staging file when that is in use. keep
// says whether an unfinished download should stay for a later run.
func (b *Builder) openSink(ctx context.Context, a authenticated) (*stagingSink, bool, error) {
	digest := hex.EncodeToString(a.meta.SHA256[:])
	var file *os.File
	var size int64
	var ok bool
	var err error
	if a.meta.digestKnown() {
		if file, size, ok, err = b.Work.OpenPartial(digest); err != nil {
			return nil, false, err
		}
	}
	if !ok {
		file, err = b.Work.CreateStaged(a.meta.Filename)
		if err != nil {
			return nil, false, err
		}
		sink := &stagingSink{fileSink: newFileSink(file, 0), counter: &b.bytes, sizes: &b.sizes, done: func() {}}
		sink.stream = b.streamHasher(ctx, sink)
		return sink, false, nil
	}
	sink := &stagingSink{fileSink: newFileSink(file, 0), counter: &b.bytes, sizes: &b.sizes, done: func() { b.Work.ReleasePartial(digest) }}
	sink.stream = b.streamHasher(ctx, sink)
	if size > 0 {
		// The entries of the bytes already there are not streamed: the
		// archive is hashed from the file once complete.
		sink.stream.Abandon("resumed a partial download")
		if err := sink.rehash(size); err != nil {
			sink.done()
			_ = file.Close()
			return nil, false, err
		}
		sink.written.Store(size)
	}
	return sink, true, nil
}

// streamHasher returns a StreamHasher for the download into sink, which
// takes turns with the build's other hashing in its hash slots: every
// other turn to the download with the most bytes still to come, since it
// ends last, the others to the longest waiting (syncx.Slots), so that no
// download waits long enough to stall.
func (b *Builder) streamHasher(ctx context.Context, sink *stagingSink) *hashing.StreamHasher {
	return hashing.NewStreamHasher(b.zipLimits(), hashing.StreamOptions{
		Acquire: func() error { return b.hashes.Acquire(ctx, sink.toCome()) },
		Release: b.hashes.Release,
	})
}

// hashSlot takes a hash slot for work already in hand (an archive to
// hash whole, a download's hashes to check), ahead of every download.
func (b *Builder) hashSlot(ctx context.Context) (func(), error) {
	if err := b.hashes.Acquire(ctx, math.MaxInt64); err != nil {
		return nil, err
	}
	return b.hashes.Release, nil
}

// describe computes the hashes a mirror publishes for a verified archive,
// from the entries hashed while it was downloaded (streamed, if not nil)
// when they are exactly the archive's, and checks them against the h1:
// hashes the upstream listed, if it listed any. With a describer, it
// makes the package's SBOM too.
func (f *fetched) describe(a authenticated, path, staged string, streamed *hashing.StreamResult, describer Describer) {
	sums, err := hashing.HashArchiveStreamed(path, a.meta.SHA256, f.limits, streamed)
	if err != nil {
		f.err = &VerificationError{Package: a.pkg, Problem: "archive refused", Err: err}
		return
	}
	if err := checkListedHashes(a.pkg, a.meta, sums); err != nil {
		f.err = err
		return
	}
	f.digest = a.meta.SHA256
	f.archive = layout.Archive{Platform: a.pkg.Platform, Staged: staged, Hashes: sums.All()}
	f.h1Unpacked = sums.H1Unpacked
	f.program = sums.Program
	if describer == nil {
		return
	}
	if sums.Program.Info != nil {
		f.goVersion = sums.Program.Info.GoVersion
	}
	if f.archive.SBOM, err = describer(description(a, sums)); err != nil {
		f.err = &PackageError{Package: a.pkg, Err: fmt.Errorf("describe %s: %w", a.meta.Filename, err)}
	}
}

// advise finds the package's known advisories, with an advisor.
func (f *fetched) advise(ctx context.Context, advisor Advisor) {
	if advisor == nil {
		return
	}
	advs, err := advisor(ctx, f.pkg, f.program)
	if err != nil {
		f.err = &PackageError{Package: f.pkg, Err: fmt.Errorf("look up the known vulnerabilities of %s: %w", f.filename, err)}
		return
	}
	f.advisories, f.advised = advs, true
}

// stagingSink writes a download to a staging or partial file and hashes
// it on the way, the file (fileSink) and its entries (stream). It can
// resume: Written is what the file already holds. With a limit, it refuses
// to grow past it.
type stagingSink struct {
	*fileSink
	stream   *hashing.StreamHasher
	counter  *atomic.Int64 // the build's downloaded bytes
	sizes    *sizeTally    // the build's announced sizes
	done     func()        // ends this run's use of the file
	expected atomic.Int64  // the archive's size, once its origin says
	written  atomic.Int64  // bytes written so far
	complete atomic.Bool   // all expected bytes arrived (counted in sizes)
}

// Expect is told the archive's whole size when the origin announces it.
func (s *stagingSink) Expect(size int64) {
	old := s.expected.Swap(size)
	if s.sizes != nil && size > 0 {
		s.sizes.announce(old, size)
	}
}

// toCome is how many bytes of the archive are still to arrive, as far as
// is known (0 when its size is not).
func (s *stagingSink) toCome() int64 { return max(s.expected.Load()-s.written.Load(), 0) }

func (s *stagingSink) Write(p []byte) (int, error) {
	n, err := s.fileSink.Write(p)
	_, _ = s.stream.Write(p[:n]) // never fails
	s.counter.Add(int64(n))
	if w := s.written.Add(int64(n)); s.sizes != nil && w == s.expected.Load() && s.complete.CompareAndSwap(false, true) {
		s.sizes.complete.Add(1)
	}
	return n, err
}

// Written is how many bytes of the archive the file holds.
func (s *stagingSink) Written() int64 { return s.hash.Len() }

// Reset empties the file and restarts the hashes.
func (s *stagingSink) Reset() error {
	s.stream.Reset()
	s.written.Store(0)
	return s.fileSink.Reset()
}

// rehash feeds the first size bytes already in the file to the hash, so a
// resumed download ends with the digest of the whole archive.
func (s *stagingSink) rehash(size int64) error {
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := io.CopyN(s.hash, s.file, size); err != nil {
		return fmt.Errorf("re-read partial download: %w", err)
	}
	_, err := s.file.Seek(size, io.SeekStart)
	s.back.Reset(size)
	return err
}

func (b *Builder) started(pkg Package) {
	if b.Options.OnEvent == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Options.OnEvent(Event{Started: &pkg})
}

func (b *Builder) zipLimits() hashing.ZipLimits {
	return b.Options.ZipLimits.WithDefaults()
}

// upstreamName names who listed a package's hashes, in messages.
func upstreamName(m PackageMeta) string {
	if m.HashesOnly != "" {
		return m.HashesOnly
	}
	return "the upstream"
}

func joinHashes(hs []hashing.Hash) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h)
	}
	return strings.Join(out, ", ")
}

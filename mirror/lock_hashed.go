package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// lockHashed computes the lock entry of a release that only an upstream's
// hashes vouch for, once the trust policy accepts that: each platform's
// archive is fetched, checked against the hashes the upstream lists, and
// its h1: and zh: recorded (there is no signed SHA256SUMS to take more
// zh: hashes from).
func (l *Locker) lockHashed(ctx context.Context, rel Package, platforms []addrs.Platform) (LockEntry, error) {
	if _, err := l.Trust.Authenticate(l.Checker, rel, Evidence{HashesOnly: l.Hashed.Name}); err != nil {
		return LockEntry{}, err
	}
	if l.Catalog != nil && l.Fallback != nil {
		l.Fallback(rel, "the mirror keeps no provenance record of it (a signed catalog vouches only for what one names)")
	}
	if len(platforms) == 0 {
		var err error
		if platforms, err = l.Hashed.Upstream.Platforms(ctx, rel.Provider, rel.Version); err != nil {
			return LockEntry{}, err
		}
	}
	var hashes []hashing.Hash
	packages := make(map[addrs.Platform]hashing.ArchiveSums, len(platforms))
	for _, plat := range platforms {
		pkg := Package{Provider: rel.Provider, Version: rel.Version, Platform: plat}
		sums, err := l.hashedArchiveSums(ctx, pkg)
		if errors.Is(err, ErrPlatformUnavailable) {
			return LockEntry{}, &ResolveError{Provider: rel.Provider, Input: true, Err: fmt.Errorf("%s %s: the mirror has no %s package", rel.Provider, rel.Version, plat)}
		}
		if err != nil {
			return LockEntry{}, err
		}
		hashes = append(hashes, sums.ZH)
		hashes = append(hashes, packageH1s(sums)...)
		packages[plat] = sums
	}
	slices.Sort(hashes)
	return LockEntry{Provider: rel.Provider, Version: rel.Version, Hashes: slices.Compact(hashes), Packages: packages}, nil
}

// hashedArchiveSums fetches a package of the hashed upstream into a
// temporary file and hashes it, refusing what does not match the hashes
// the upstream lists.
func (l *Locker) hashedArchiveSums(ctx context.Context, pkg Package) (hashing.ArchiveSums, error) {
	meta, err := l.Hashed.PackageMeta(ctx, pkg.Provider, pkg.Version, pkg.Platform)
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	tmp, err := os.CreateTemp(l.TempDir, "tfmirror-archive-*.zip")
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	sink := newFileSink(tmp, meta.Size)
	err = meta.Archive.Fetch(ctx, sink)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return hashing.ArchiveSums{}, &PackageError{Package: pkg, Err: fmt.Errorf("fetch %s: %w", meta.Filename, err)}
	}
	digest := sink.hash.Sum()
	if meta.digestKnown() && digest != meta.SHA256 {
		return hashing.ArchiveSums{}, &VerificationError{Package: pkg, Problem: fmt.Sprintf(
			"archive has checksum %s, but %s lists %s", hashing.ZH(digest), meta.HashesOnly, hashing.ZH(meta.SHA256))}
	}
	sums, err := hashing.HashArchive(tmp.Name(), digest, l.Limits.WithDefaults())
	if err != nil {
		return hashing.ArchiveSums{}, &VerificationError{Package: pkg, Problem: "archive refused", Err: err}
	}
	return sums, checkListedHashes(pkg, meta, sums)
}

// fileSink is a Sink into a file, hashed on the way, that refuses to grow
// past limit (0: no limit): a download's staging file, or a temporary one.
type fileSink struct {
	file  *os.File
	hash  *hashing.Writer
	limit int64
	// back starts the file's writeback as it grows, so the fsync that
	// publishes it has little left to wait for.
	back *atomicfile.Writeback
}

func newFileSink(f *os.File, limit int64) *fileSink {
	return &fileSink{file: f, hash: hashing.NewWriter(), limit: limit, back: atomicfile.NewWriteback(f)}
}

func (s *fileSink) Write(p []byte) (int, error) {
	if s.limit > 0 && s.hash.Len()+int64(len(p)) > s.limit {
		return 0, fmt.Errorf("%w: the archive is longer than the %d bytes the registry announced", ErrTooLarge, s.limit)
	}
	n, err := s.file.Write(p)
	_, _ = s.hash.Write(p[:n])
	s.back.Wrote(n)
	return n, err
}

// Limit is the most the file takes (see stagingSink).
func (s *fileSink) Limit() int64 { return s.limit }

// Reset empties the file and restarts the hash.
func (s *fileSink) Reset() error {
	if err := s.file.Truncate(0); err != nil {
		return err
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	s.hash = hashing.NewWriter()
	s.back.Reset(0)
	return nil
}

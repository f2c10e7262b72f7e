package mirror

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// errMissing means a file a document lists is not in the mirror.
var errMissing = errors.New("listed but missing")

// Packages is a built mirror as lock files are computed from it: a tree
// (a directory, a bucket, a published URL) or a registry (OCI). Missing
// things are errors wrapping fs.ErrNotExist.
type Packages interface {
	// Location names the mirror in messages; it never holds a secret.
	Location() string
	// Versions lists the versions the mirror holds of a provider.
	Versions(ctx context.Context, p addrs.Provider) (addrs.VersionList, error)
	// ReadRecord returns what the mirror kept of a release's origin:
	// SHA256SUMS, signature, signing keys and provenance.
	ReadRecord(ctx context.Context, p addrs.Provider, v addrs.Version) (layout.Record, error)
	// OpenArchive streams a package's archive.
	OpenArchive(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) (io.ReadCloser, error)
	// ReadSBOM returns the SBOM of a package, as its release's
	// provenance names it; an error wrapping fs.ErrNotExist when it names
	// none.
	ReadSBOM(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) ([]byte, error)
}

var _ Packages = (*layout.Tree)(nil)

// archiveSums reads a package's archive from a mirror and computes every
// hash of it: in place when the mirror is on the local filesystem, else
// through a temporary file. A missing archive wraps errMissing.
func archiveSums(ctx context.Context, m Packages, pkg Package, limits hashing.ZipLimits, tempDir string) (hashing.ArchiveSums, error) {
	if l, ok := m.(localArchiver); ok {
		if local, ok := l.LocalArchive(pkg.Provider, pkg.Version, pkg.Platform); ok {
			return localArchiveSums(local, limits)
		}
	}
	body, err := m.OpenArchive(ctx, pkg.Provider, pkg.Version, pkg.Platform)
	return streamSums(body, err, limits, tempDir)
}

// streamSums hashes an archive read from body (or fails with err, from
// opening it) through a temporary file in tempDir ("" means the
// system's) that is removed after.
func streamSums(body io.ReadCloser, err error, limits hashing.ZipLimits, tempDir string) (hashing.ArchiveSums, error) {
	limits = limits.WithDefaults()
	if errors.Is(err, fs.ErrNotExist) {
		return hashing.ArchiveSums{}, errMissing
	}
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	defer body.Close()
	tmp, err := os.CreateTemp(tempDir, "tfmirror-archive-*.zip")
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	w := hashing.NewWriter()
	_, err = io.Copy(io.MultiWriter(tmp, w), body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return hashing.ArchiveSums{}, fmt.Errorf("read: %w", err)
	}
	return hashing.HashArchive(tmp.Name(), w.Sum(), limits)
}

func localArchiveSums(local string, limits hashing.ZipLimits) (hashing.ArchiveSums, error) {
	limits = limits.WithDefaults()
	sum, _, err := hashing.HashFile(local)
	if errors.Is(err, fs.ErrNotExist) {
		return hashing.ArchiveSums{}, errMissing
	}
	if err != nil {
		return hashing.ArchiveSums{}, err
	}
	return hashing.HashArchive(local, sum, limits)
}

// signedArchiveSums is archiveSums for an archive whose bytes the signed
// SHA256SUMS fixes: bytes with another digest are refused.
func signedArchiveSums(ctx context.Context, m Packages, pkg Package, want [sha256.Size]byte, limits hashing.ZipLimits, tempDir string) (hashing.ArchiveSums, error) {
	sums, err := archiveSums(ctx, m, pkg, limits, tempDir)
	if err != nil {
		return sums, err
	}
	if sums.ZH != hashing.ZH(want) {
		return hashing.ArchiveSums{}, fmt.Errorf("the archive is %s, but the signed SHA256SUMS says %s", sums.ZH, hashing.ZH(want))
	}
	return sums, nil
}

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
	"github.com/tfmirror/tfmirror/layout"
)

// errMissing means a file a document lists is not in the mirror.
var errMissing = errors.New("listed but missing")

// archiveSums reads an archive of a tree and computes every hash of it:
// in place when the tree is on the local filesystem, else through a
// temporary file in tempDir ("" means the system's) that is removed after.
// A missing archive wraps errMissing.
func archiveSums(ctx context.Context, t *layout.Tree, rel string, limits hashing.ZipLimits, tempDir string) (hashing.ArchiveSums, error) {
	if limits == (hashing.ZipLimits{}) {
		limits = hashing.DefaultZipLimits
	}
	if local, ok := t.LocalPath(rel); ok {
		sum, _, err := hashing.HashFile(local)
		if errors.Is(err, fs.ErrNotExist) {
			return hashing.ArchiveSums{}, errMissing
		}
		if err != nil {
			return hashing.ArchiveSums{}, err
		}
		return hashing.HashArchive(local, sum, limits)
	}
	body, err := t.Reader().Open(ctx, rel)
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

// signedArchiveSums is archiveSums for an archive whose bytes the signed
// SHA256SUMS fixes: bytes with another digest are refused.
func signedArchiveSums(ctx context.Context, t *layout.Tree, rel string, want [sha256.Size]byte, limits hashing.ZipLimits, tempDir string) (hashing.ArchiveSums, error) {
	sums, err := archiveSums(ctx, t, rel, limits, tempDir)
	if err != nil {
		return sums, err
	}
	if sums.ZH != hashing.ZH(want) {
		return hashing.ArchiveSums{}, fmt.Errorf("the archive is %s, but the signed SHA256SUMS says %s", sums.ZH, hashing.ZH(want))
	}
	return sums, nil
}

package hashing

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/dirhash"
)

// Hash is a package hash in OpenTofu's "scheme:value" form.
type Hash string

// Hash schemes understood by OpenTofu and Terraform.
const (
	SchemeH1 = "h1:"
	SchemeZH = "zh:"
)

// ZH returns the "zh:" hash for a zip whose SHA-256 digest is sum.
func ZH(sum [sha256.Size]byte) Hash {
	return Hash(SchemeZH + hex.EncodeToString(sum[:]))
}

// H1Zip returns the "h1:" hash of the zip file at path as OpenTofu computes
// it for an archive: dirhash over every entry, directory entries included.
func H1Zip(path string) (Hash, error) {
	h, err := dirhash.HashZip(path, dirhash.Hash1)
	if err != nil {
		return "", fmt.Errorf("compute h1 of %s: %w", path, err)
	}
	return Hash(h), nil
}

// H1Unpacked returns the "h1:" hash OpenTofu computes for the directory the
// zip at path unpacks to: like H1Zip but without directory entries. This is
// the hash "tofu init" records for the platform it installs, and it differs
// from H1Zip only when the archive holds explicit directory entries.
func H1Unpacked(path string) (Hash, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return "", fmt.Errorf("open zip %s: %w", path, err)
	}
	defer zr.Close()
	var files []string
	byName := make(map[string]*zip.File)
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		files = append(files, f.Name)
		byName[f.Name] = f
	}
	open := func(name string) (io.ReadCloser, error) { return byName[name].Open() }
	h, err := dirhash.Hash1(files, open)
	if err != nil {
		return "", fmt.Errorf("compute unpacked h1 of %s: %w", path, err)
	}
	return Hash(h), nil
}

// ArchiveSums are the hashes of one provider archive, by kind.
type ArchiveSums struct {
	ZH Hash // SHA-256 of the zip file
	H1 Hash // dirhash of the zip's entries, what clients check archives against
	// H1Unpacked is the dirhash of the unpacked package, what "tofu init"
	// records in lock files. It equals H1 unless the zip has directory entries.
	H1Unpacked Hash
}

// HashArchive checks the zip at path against limits, then computes every
// hash of it; sum is its SHA-256 digest, computed while it was downloaded.
func HashArchive(path string, sum [sha256.Size]byte, limits ZipLimits) (ArchiveSums, error) {
	if err := checkZipFile(path, limits); err != nil {
		return ArchiveSums{}, err
	}
	h1, err := H1Zip(path)
	if err != nil {
		return ArchiveSums{}, err
	}
	unpacked, err := H1Unpacked(path)
	if err != nil {
		return ArchiveSums{}, err
	}
	return ArchiveSums{ZH: ZH(sum), H1: h1, H1Unpacked: unpacked}, nil
}

// All returns the distinct hashes, sorted the way OpenTofu sorts them.
func (a ArchiveSums) All() []Hash {
	hs := []Hash{a.ZH, a.H1, a.H1Unpacked}
	slices.Sort(hs)
	return slices.Compact(hs)
}

// ArchiveHashes returns the hashes a mirror publishes for the zip at path:
// its zh:, its h1: and, when different, the h1: of its unpacked form, sorted
// the way OpenTofu sorts hashes.
func ArchiveHashes(path string, sum [sha256.Size]byte) ([]Hash, error) {
	a, err := HashArchive(path, sum, DefaultZipLimits)
	if err != nil {
		return nil, err
	}
	return a.All(), nil
}

func checkZipFile(path string, limits ZipLimits) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("open zip %s: %w", path, err)
	}
	defer zr.Close()
	return CheckZip(&zr.Reader, limits)
}

// Writer hashes everything written to it with SHA-256 and counts the bytes.
// Use it with io.MultiWriter to hash a download while it is written to disk.
type Writer struct {
	h hash.Hash
	n int64
}

// NewWriter returns a Writer ready for use.
func NewWriter() *Writer { return &Writer{h: sha256.New()} }

func (w *Writer) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return w.h.Write(p)
}

// Sum returns the SHA-256 digest of what was written so far.
func (w *Writer) Sum() [sha256.Size]byte {
	var s [sha256.Size]byte
	copy(s[:], w.h.Sum(nil))
	return s
}

// Len returns how many bytes were written.
func (w *Writer) Len() int64 { return w.n }

package hashing

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/excerpt"
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

// ZHDigest is the SHA-256 digest a "zh:" hash names; an error for any
// other hash or a malformed one.
func (h Hash) ZHDigest() ([sha256.Size]byte, error) {
	hexSum, ok := strings.CutPrefix(string(h), SchemeZH)
	if !ok {
		return [sha256.Size]byte{}, fmt.Errorf("%s is not a zh: hash", excerpt.Quote(string(h)))
	}
	return ParseHex(hexSum)
}

// ArchiveSums are the hashes of one provider archive, by kind.
type ArchiveSums struct {
	ZH Hash // SHA-256 of the zip file
	H1 Hash // dirhash of the zip's entries, what clients check archives against
	// H1Unpacked is the dirhash of the unpacked package, what "tofu init"
	// records in lock files. It equals H1 unless the zip has directory entries.
	H1Unpacked Hash
	// Program is what the package's executable says it was built from,
	// read while its bytes were hashed.
	Program Program
}

// HashArchive checks the zip at path against limits and against the rule
// every package must pass to be unpacked (CheckZip), then computes every
// hash of it; sum is its SHA-256 digest, computed while it was downloaded.
// An archive it refuses must not be published: the error names the entry.
//
// Both h1: hashes come from one pass over the archive: each entry is
// decompressed and hashed once, then summarized twice, exactly as
// dirhash.HashZip (every entry) and dirhash.HashDir of the unpacked
// package (its files: no directory entries) would; the tests hold it to
// both, the second by unpacking with the unpacked filesystem layout.
// Deflate entries are decompressed with a faster decoder than
// archive/zip's own, held to it by the tests.
func HashArchive(path string, sum [sha256.Size]byte, limits ZipLimits) (ArchiveSums, error) {
	return HashArchiveStreamed(path, sum, limits, nil)
}

// HashArchiveStreamed is HashArchive for an archive whose entries a
// StreamHasher hashed while it was downloaded (streamed, which may be
// nil): it still checks the central directory with CheckZip, but takes
// each entry's SHA-256 from streamed instead of decompressing the entry
// again, if streamed followed exactly the entries the central directory
// describes (see streamedSums); otherwise it hashes the file. Either way
// the hashes are the same. It records in streamed which way it went.
func HashArchiveStreamed(path string, sum [sha256.Size]byte, limits ZipLimits, streamed *StreamResult) (ArchiveSums, error) {
	zr, err := zip.OpenReader(path)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) { // CheckZip names the entry
		return ArchiveSums{}, fmt.Errorf("open zip %s: %w", path, err)
	}
	defer zr.Close()
	useFastInflate(&zr.Reader)
	if err := CheckZip(&zr.Reader, limits); err != nil {
		return ArchiveSums{}, err
	}
	if err := checkNames(zr.File); err != nil {
		return ArchiveSums{}, fmt.Errorf("compute h1 of %s: %w", path, err)
	}
	entries, mismatch := streamedSums(zr.File, streamed)
	if streamed != nil {
		streamed.Summarized, streamed.Mismatch = entries != nil, mismatch
	}
	var program Program
	if entries != nil {
		program = streamed.Program
	} else if entries, program, err = hashEntries(zr.File); err != nil {
		return ArchiveSums{}, fmt.Errorf("compute h1 of %s: %w", path, err)
	}
	var all, files []string
	for _, f := range zr.File {
		all = append(all, f.Name)
		// A directory by its mode, as CheckUnpackable and installers
		// decide (a name ending in "/" always is one): it unpacks to a
		// directory, which dirhash.HashDir does not list.
		if !f.Mode().IsDir() {
			files = append(files, f.Name)
		}
	}
	return ArchiveSums{ZH: ZH(sum), H1: summarize(all, entries), H1Unpacked: summarize(files, entries), Program: program}, nil
}

// checkNames refuses what dirhash refuses: a name with a newline.
func checkNames(files []*zip.File) error {
	for _, f := range files {
		if strings.Contains(f.Name, "\n") {
			return fmt.Errorf("file name %s contains a newline", excerpt.Quote(f.Name))
		}
	}
	return nil
}

// hashEntries decompresses every entry once and returns the SHA-256 of
// each name's content, and what the provider's executable says it was
// built from. Names are unique (CheckZip refused duplicates); like
// dirhash.HashZip, a name that appeared twice would stand for its last
// entry.
func hashEntries(files []*zip.File) (map[string][sha256.Size]byte, Program, error) {
	last := make(map[string]*zip.File, len(files))
	for _, f := range files {
		last[f.Name] = f
	}
	out := make(map[string][sha256.Size]byte, len(last))
	// No CRC-32: archive/zip checks each entry's.
	w := entryWriter{sha: sha256.New()}
	var prog programScan
	for _, f := range files {
		if last[f.Name] != f {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return nil, Program{}, err
		}
		w.reset(math.MaxUint64, prog.writerFor(f.Name))
		_, err = io.Copy(&w, r)
		_ = r.Close()
		if err != nil {
			return nil, Program{}, fmt.Errorf("read %s: %w", f.Name, err)
		}
		prog.entryDone(f.Name)
		var s [sha256.Size]byte
		w.sha.Sum(s[:0])
		out[f.Name] = s
	}
	return out, prog.program, nil
}

// summarize is dirhash's Hash1 over names whose contents are already
// hashed: "<hex sha256>  <name>\n" per sorted name, hashed, base64.
func summarize(names []string, sums map[string][sha256.Size]byte) Hash {
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%x  %s\n", sums[name], name)
	}
	return Hash("h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil)))
}

// All returns the distinct hashes, sorted the way OpenTofu sorts them.
func (a ArchiveSums) All() []Hash {
	hs := []Hash{a.ZH, a.H1, a.H1Unpacked}
	slices.Sort(hs)
	return slices.Compact(hs)
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

// HashFile returns the SHA-256 digest and size of the file at path,
// streaming it.
func HashFile(path string) ([sha256.Size]byte, int64, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return [sha256.Size]byte{}, 0, err
	}
	w := NewWriter()
	_, err = io.Copy(w, f)
	_ = f.Close() // read-only
	if err != nil {
		return [sha256.Size]byte{}, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return w.Sum(), w.Len(), nil
}

// OpenRegular opens path only if it is a regular file, not a link, device
// or pipe, even one swapped in while it is opened: a mirror's files are
// outside input, and a link to /dev/zero must not make a reader read
// forever.
func OpenRegular(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is a %s, not a regular file: not followed", path, atomicfile.TypeName(before.Mode()))
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) || !after.Mode().IsRegular() {
		_ = f.Close()
		return nil, fmt.Errorf("%s changed while it was opened", path)
	}
	return f, nil
}

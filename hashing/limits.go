package hashing

import (
	"archive/zip"
	"fmt"
)

// ZipLimits bound the work of reading an archive, so a zip bomb fails
// cleanly instead of exhausting CPU or disk. This package's functions take
// them as given (a zero field allows nothing); callers for which a zero
// field means the default call WithDefaults.
type ZipLimits struct {
	MaxEntries       int   // files and directories
	MaxUnpackedBytes int64 // sum of the entries' uncompressed sizes
}

// DefaultZipLimits fit every real provider package with a wide margin: the
// largest (hashicorp/aws) unpacks to under 1 GB in a handful of files.
var DefaultZipLimits = ZipLimits{MaxEntries: 10_000, MaxUnpackedBytes: 4 << 30}

// WithDefaults returns l with its zero (or negative) fields set from
// DefaultZipLimits.
func (l ZipLimits) WithDefaults() ZipLimits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultZipLimits.MaxEntries
	}
	if l.MaxUnpackedBytes <= 0 {
		l.MaxUnpackedBytes = DefaultZipLimits.MaxUnpackedBytes
	}
	return l
}

// CheckZip refuses an archive that exceeds limits or that cannot be
// unpacked into a package directory exactly as named (CheckUnpackable: an
// escaping or non-canonical name, a duplicate, a file that is also a
// directory, a symbolic link, ...); the error names the entry. It reads
// only the central directory; archive/zip then refuses any entry that
// inflates past its declared size, so the declared sizes checked here bound
// the real work.
func CheckZip(zr *zip.Reader, limits ZipLimits) error {
	if len(zr.File) > limits.MaxEntries {
		return fmt.Errorf("archive has %d entries, more than the limit of %d", len(zr.File), limits.MaxEntries)
	}
	if _, err := CheckUnpackable(zr.File); err != nil {
		return fmt.Errorf("archive cannot be unpacked as a package directory: %w", err)
	}
	// Compared as what is left, so that a huge declared size cannot wrap
	// the sum around.
	left := uint64(max(limits.MaxUnpackedBytes, 0))
	for _, f := range zr.File {
		if f.UncompressedSize64 > left {
			return fmt.Errorf("archive unpacks to more than the limit of %d bytes", limits.MaxUnpackedBytes)
		}
		left -= f.UncompressedSize64
	}
	return nil
}

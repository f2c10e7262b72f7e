package hashing

import (
	"archive/zip"
	"fmt"
	"path"
	"strings"
)

// ZipLimits bound the work of reading an archive, so a zip bomb fails
// cleanly instead of exhausting CPU or disk.
type ZipLimits struct {
	MaxEntries       int   // files and directories
	MaxUnpackedBytes int64 // sum of the entries' uncompressed sizes
}

// DefaultZipLimits fit every real provider package with a wide margin: the
// largest (hashicorp/aws) unpacks to under 1 GB in a handful of files.
var DefaultZipLimits = ZipLimits{MaxEntries: 10_000, MaxUnpackedBytes: 4 << 30}

// CheckZip refuses an archive that exceeds limits or whose entry names
// would escape the directory it unpacks to. It reads only the central
// directory; archive/zip then refuses any entry that inflates past its
// declared size, so the declared sizes checked here bound the real work.
func CheckZip(zr *zip.Reader, limits ZipLimits) error {
	if len(zr.File) > limits.MaxEntries {
		return fmt.Errorf("archive has %d entries, more than the limit of %d", len(zr.File), limits.MaxEntries)
	}
	var total uint64
	for _, f := range zr.File {
		if err := checkEntryName(f.Name); err != nil {
			return err
		}
		total += f.UncompressedSize64
		if total > uint64(limits.MaxUnpackedBytes) {
			return fmt.Errorf("archive unpacks to more than the limit of %d bytes", limits.MaxUnpackedBytes)
		}
	}
	return nil
}

func checkEntryName(name string) error {
	clean := path.Clean(strings.ReplaceAll(name, "\\", "/"))
	if name == "" || strings.HasPrefix(clean, "/") || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, "\x00") {
		return fmt.Errorf("archive entry %q would unpack outside the package directory", name)
	}
	return nil
}

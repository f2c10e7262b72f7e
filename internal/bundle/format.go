package bundle

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Names of the bundle's fixed entries and sections.
const (
	ManifestName  = "manifest.json"
	SignatureName = "manifest.json.sig"
	MirrorDir     = "mirror"
	LockFilesDir  = "lock-files"
	CLIConfigDir  = "cli-config"

	// LockFileName is the base name of every file under lock-files/.
	LockFileName = ".terraform.lock.hcl"
)

// FormatVersion is the manifest's "format"; Import refuses any other.
const FormatVersion = 1

// createdBy is the manifest's "created_by".
const createdBy = "tfmirror"

// Limits bound what Import accepts, so a hostile bundle cannot fill the
// disk or exhaust memory before it is refused.
type Limits struct {
	MaxEntries int   // tar entries after the manifest and its signature (files and directories)
	MaxBytes   int64 // sum of the files' sizes
}

// DefaultLimits are generous enough for a mirror of every version of the
// largest providers.
var DefaultLimits = Limits{MaxEntries: 1_000_000, MaxBytes: 1 << 40}

// Limits on the two entries read into memory.
const (
	maxManifestBytes  = 256 << 20
	maxSignatureBytes = 64 << 10
	// maxTrailingBytes is how much zero padding after the tar's end is
	// accepted (GNU tar pads to 10 KiB records).
	maxTrailingBytes = 1 << 20
)

// Manifest is the content of manifest.json.
type Manifest struct {
	Format    int    `json:"format"`
	CreatedBy string `json:"created_by"`
	Files     []File `json:"files"`
}

// File is one file of a bundle: its path in the archive (slash-separated,
// under mirror/, lock-files/ or cli-config/), SHA-256 (lowercase hex) and
// size.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// encodeManifest renders the manifest in its one canonical form.
func encodeManifest(m Manifest) ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// decodeManifest parses manifest.json and checks everything that can be
// checked without the files: shape, canonical form (so no byte can change
// unnoticed), format, paths, digests, order and limits.
func decodeManifest(data []byte, limits Limits) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("parse: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Manifest{}, errors.New("parse: trailing data after the JSON value")
	}
	if m.Format != FormatVersion {
		return Manifest{}, fmt.Errorf("format %d is not supported (this tfmirror reads format %d)", m.Format, FormatVersion)
	}
	if m.CreatedBy != createdBy {
		return Manifest{}, fmt.Errorf("created_by is %q, not %q", m.CreatedBy, createdBy)
	}
	if canonical, err := encodeManifest(m); err != nil || !bytes.Equal(canonical, data) {
		return Manifest{}, errors.New("not in the canonical form tfmirror writes (edited or damaged)")
	}
	if len(m.Files) > limits.MaxEntries {
		return Manifest{}, fmt.Errorf("lists %d files, more than the limit of %d", len(m.Files), limits.MaxEntries)
	}
	var total int64
	for i, f := range m.Files {
		if err := checkFile(f); err != nil {
			return Manifest{}, err
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			return Manifest{}, fmt.Errorf("files are not sorted by path, or %q is listed twice", f.Path)
		}
		if total += f.Size; total > limits.MaxBytes {
			return Manifest{}, fmt.Errorf("files add up to more than the limit of %d bytes", limits.MaxBytes)
		}
	}
	return m, nil
}

func checkFile(f File) error {
	if err := checkName(f.Path); err != nil {
		return fmt.Errorf("%q: %w", f.Path, err)
	}
	if err := checkSection(f.Path); err != nil {
		return err
	}
	if len(f.SHA256) != 64 || strings.ToLower(f.SHA256) != f.SHA256 {
		return fmt.Errorf("%s: sha256 %q is not 64 lowercase hex digits", f.Path, f.SHA256)
	}
	if _, err := hex.DecodeString(f.SHA256); err != nil {
		return fmt.Errorf("%s: sha256 %q is not 64 lowercase hex digits", f.Path, f.SHA256)
	}
	if f.Size < 0 {
		return fmt.Errorf("%s: negative size", f.Path)
	}
	return nil
}

// checkSection accepts the paths a bundle's files may have.
func checkSection(name string) error {
	section, rest, _ := strings.Cut(name, "/")
	switch {
	case rest == "":
	case section == MirrorDir:
		return nil
	case section == LockFilesDir && path.Base(rest) == LockFileName:
		return nil
	case section == CLIConfigDir && !strings.Contains(rest, "/"):
		return nil
	}
	return fmt.Errorf("%s: not a path a bundle holds (mirror/..., %s/.../%s or %s/NAME)", name, LockFilesDir, LockFileName, CLIConfigDir)
}

// checkName refuses an entry name that could land outside the directory
// it is unpacked into, or mean different files on different systems:
// absolute paths, "." and ".." elements, empty elements, backslashes,
// NUL and other control characters, invalid UTF-8.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty entry name")
	case !utf8.ValidString(name):
		return errors.New("not valid UTF-8")
	case strings.ContainsAny(name, "\\:"):
		return errors.New("backslashes and colons are not allowed in entry names")
	case strings.IndexFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return errors.New("control characters are not allowed in entry names")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute path")
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == ".." {
			return errors.New("path traversal (\"..\")")
		}
	}
	if !isValidPath(name) || !filepath.IsLocal(filepath.FromSlash(name)) {
		return errors.New("not a clean relative path")
	}
	return nil
}

// isValidPath is fs.ValidPath without its special case for ".".
func isValidPath(name string) bool {
	if name == "." {
		return false
	}
	for _, elem := range strings.Split(name, "/") {
		if elem == "" || elem == "." {
			return false
		}
	}
	return true
}

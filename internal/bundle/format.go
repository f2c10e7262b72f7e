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

	"github.com/tfmirror/tfmirror/layout"
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
// disk or exhaust memory before it is refused. A zero field means its
// default.
type Limits struct {
	MaxEntries int   // files the manifest lists
	MaxBytes   int64 // sum of the files' sizes
}

// DefaultLimits fit a bundle of every version and platform of the largest
// providers with a wide margin: hashicorp/aws's whole history is about
// 11,000 files and 1 TB. MaxEntries also bounds the manifest Import holds
// in memory (about 250 bytes an entry).
var DefaultLimits = Limits{MaxEntries: 200_000, MaxBytes: 1 << 40}

// orDefault fills the zero fields from DefaultLimits.
func (l Limits) orDefault() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	return l
}

// Limits on what is read into memory, and on the trailer.
const (
	// maxManifestBytes holds DefaultLimits.MaxEntries entries of a
	// canonical manifest with room to spare.
	maxManifestBytes  = 64 << 20
	maxSignatureBytes = 64 << 10
	// maxExtraBytes bounds each lock file and CLI configuration snippet
	// (a lock file of 1,000 providers with every platform's hashes is
	// about 2 MiB).
	maxExtraBytes = 4 << 20
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

// encodeManifest renders the manifest in its one canonical form, the
// form json.MarshalIndent(m, "", "  ") gives, with a final newline.
func encodeManifest(m Manifest) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeManifest(&buf, m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeManifest writes the canonical form entry by entry, so comparing a
// manifest with it needs no second copy in memory.
func writeManifest(w io.Writer, m Manifest) error {
	createdBy, err := json.Marshal(m.CreatedBy)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "{\n  \"format\": %d,\n  \"created_by\": %s,\n  \"files\": ", m.Format, createdBy); err != nil {
		return err
	}
	if len(m.Files) == 0 {
		_, err := io.WriteString(w, "[]\n}\n")
		return err
	}
	for i, f := range m.Files {
		data, err := json.MarshalIndent(f, "    ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n    "
		if i == 0 {
			sep = "[\n    "
		}
		if _, err := fmt.Fprintf(w, "%s%s", sep, data); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "\n  ]\n}\n")
	return err
}

// sameBytes is a writer that tells whether what is written is exactly want.
type sameBytes struct {
	want []byte
	off  int
	diff bool
}

func (s *sameBytes) Write(p []byte) (int, error) {
	if !s.diff && bytes.HasPrefix(s.want[s.off:], p) {
		s.off += len(p)
	} else {
		s.diff = true
	}
	return len(p), nil
}

func (s *sameBytes) same() bool { return !s.diff && s.off == len(s.want) }

// boundedFiles decodes the manifest's file list one entry at a time and
// stops past max, so a manifest listing too many files is refused before
// they are all in memory.
type boundedFiles struct {
	max   int
	files []File
}

func (b *boundedFiles) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return errors.New("files is not an array")
	}
	for dec.More() {
		if len(b.files) == b.max {
			return fmt.Errorf("lists more than the limit of %d files", b.max)
		}
		var f File
		if err := dec.Decode(&f); err != nil {
			return err
		}
		b.files = append(b.files, f)
	}
	return nil
}

// decodeManifest parses manifest.json and checks everything that can be
// checked without the files: shape, limits, canonical form (so no byte can
// change unnoticed), format, paths, digests, sizes and order.
func decodeManifest(data []byte, limits Limits) (Manifest, error) {
	limits = limits.orDefault()
	raw := struct {
		Format    int          `json:"format"`
		CreatedBy string       `json:"created_by"`
		Files     boundedFiles `json:"files"`
	}{Files: boundedFiles{max: limits.MaxEntries}}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Manifest{}, fmt.Errorf("parse: %w", err)
	}
	m := Manifest{Format: raw.Format, CreatedBy: raw.CreatedBy, Files: raw.Files.files}
	if m.Format != FormatVersion {
		return Manifest{}, fmt.Errorf("format %d is not supported (this tfmirror reads format %d)", m.Format, FormatVersion)
	}
	if m.CreatedBy != createdBy {
		return Manifest{}, fmt.Errorf("created_by is %q, not %q", m.CreatedBy, createdBy)
	}
	cmp := &sameBytes{want: data}
	if err := writeManifest(cmp, m); err != nil || !cmp.same() {
		return Manifest{}, errors.New("not in the canonical form tfmirror writes (edited or damaged)")
	}
	return m, checkFiles(m.Files, limits)
}

// checkFiles checks each listed file, their order and their total size.
func checkFiles(files []File, limits Limits) error {
	var total int64
	for i, f := range files {
		if err := checkFile(f); err != nil {
			return err
		}
		if i > 0 && files[i-1].Path >= f.Path {
			return fmt.Errorf("files are not sorted by path, or %q is listed twice", f.Path)
		}
		if total += f.Size; total > limits.MaxBytes {
			return fmt.Errorf("files add up to more than the limit of %d bytes", limits.MaxBytes)
		}
	}
	return nil
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
	if limit := maxFileBytes(f.Path); limit > 0 && f.Size > limit {
		return fmt.Errorf("%s: %d bytes, more than the limit of %d for such a file", f.Path, f.Size, limit)
	}
	return nil
}

// maxFileBytes is the largest size a file at name can have, or 0 for an
// archive (bounded only by Limits.MaxBytes): the limits the mirror's
// readers apply to its documents, and maxExtraBytes for the extras.
func maxFileBytes(name string) int64 {
	switch {
	case !strings.HasPrefix(name, MirrorDir+"/"):
		return maxExtraBytes
	case strings.HasSuffix(name, ".json"):
		return layout.MaxDocumentBytes
	case strings.HasSuffix(name, "_SHA256SUMS"), strings.HasSuffix(name, "_SHA256SUMS.sig"):
		return layout.MaxSumsBytes
	}
	return 0
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

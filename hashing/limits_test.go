package hashing

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func buildZipFile(t *testing.T, build func(zw *zip.Writer)) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	build(zw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.zip")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func addFile(t *testing.T, zw *zip.Writer, name string, size int) {
	t.Helper()
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
}

func TestHashArchiveLimits(t *testing.T) {
	limits := ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 1 << 20}
	tests := []struct {
		name    string
		build   func(*testing.T, *zip.Writer)
		wantErr string
	}{
		{"within limits", func(t *testing.T, zw *zip.Writer) {
			addFile(t, zw, "terraform-provider-x", 1000)
			addFile(t, zw, "docs/README", 10)
		}, ""},
		{"too many entries", func(t *testing.T, zw *zip.Writer) {
			for _, n := range []string{"a", "b", "c", "d"} {
				addFile(t, zw, n, 1)
			}
		}, "4 entries, more than the limit of 3"},
		{"unpacks too large", func(t *testing.T, zw *zip.Writer) {
			addFile(t, zw, "zeros", 2<<20) // 2 MiB of zeros: a few KB compressed
		}, "unpacks to more than the limit"},
		// A declared size so large that a running sum would wrap around to
		// below the limit.
		{"sizes that wrap around", func(t *testing.T, zw *zip.Writer) {
			addFile(t, zw, "one", 1)
			w, err := zw.CreateRaw(&zip.FileHeader{Name: "huge", Method: zip.Store, CRC32: crc32.ChecksumIEEE([]byte("x")), CompressedSize64: 1, UncompressedSize64: math.MaxUint64})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}, "unpacks to more than the limit"},
		{"parent directory", func(t *testing.T, zw *zip.Writer) { addFile(t, zw, "../evil", 1) }, `entry "../evil": name leaves the package directory`},
		{"nested parent", func(t *testing.T, zw *zip.Writer) { addFile(t, zw, "a/../../evil", 1) }, `entry "a/../../evil": name leaves the package directory`},
		{"absolute", func(t *testing.T, zw *zip.Writer) { addFile(t, zw, "/etc/passwd", 1) }, `entry "/etc/passwd": name is absolute`},
		{"backslashes", func(t *testing.T, zw *zip.Writer) { addFile(t, zw, "..\\evil", 1) }, `name contains a backslash`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := buildZipFile(t, func(zw *zip.Writer) { tt.build(t, zw) })
			_, err := HashArchive(path, [sha256.Size]byte{}, limits)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("err = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestLyingZipIsRefused covers an entry that declares a small size but
// inflates to far more: reading must stop with an error, not hash on.
func TestLyingZipIsRefused(t *testing.T) {
	var deflated bytes.Buffer
	fw, err := flate.NewWriter(&deflated, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	content := make([]byte, 8<<20)
	if _, err := fw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	path := buildZipFile(t, func(zw *zip.Writer) {
		w, err := zw.CreateRaw(&zip.FileHeader{
			Name:               "small",
			Method:             zip.Deflate,
			CRC32:              crc32.ChecksumIEEE(content),
			CompressedSize64:   uint64(deflated.Len()),
			UncompressedSize64: 100, // the lie
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(deflated.Bytes()); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := HashArchive(path, [sha256.Size]byte{}, ZipLimits{MaxEntries: 10, MaxUnpackedBytes: 1 << 20}); err == nil {
		t.Fatal("an entry that inflates past its declared size was hashed")
	}
}

func TestZipLimitsWithDefaults(t *testing.T) {
	d := DefaultZipLimits
	for _, tt := range []struct {
		in, want ZipLimits
	}{
		{ZipLimits{}, d},
		{ZipLimits{MaxEntries: 3}, ZipLimits{MaxEntries: 3, MaxUnpackedBytes: d.MaxUnpackedBytes}},
		{ZipLimits{MaxUnpackedBytes: 10}, ZipLimits{MaxEntries: d.MaxEntries, MaxUnpackedBytes: 10}},
		{ZipLimits{MaxEntries: -1, MaxUnpackedBytes: -1}, d},
		{ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 10}, ZipLimits{MaxEntries: 3, MaxUnpackedBytes: 10}},
	} {
		if got := tt.in.WithDefaults(); got != tt.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

package fakeregistry

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
)

// AddZipBomb publishes namespace/type at version for the given platforms,
// each archive a valid zip holding the single file
// "terraform-provider-<type>_v<version>" (mode 0755) of uncompressedBytes
// zero bytes, deflated so the archive is about 800 times smaller. The
// archive is built streaming, never holding the uncompressed data (sizes of
// 4 GiB and more get zip64 records). SHA256SUMS lists it and is signed
// as for Add, so only a limit on extracted size can catch it. All platforms
// share the same archive.
func (r *Registry) AddZipBomb(namespace, typ, version string, uncompressedBytes int64, platforms ...string) {
	r.t.Helper()
	data, err := zipBomb(binaryName(typ, version), uncompressedBytes)
	if err != nil {
		r.t.Fatalf("fakeregistry: build zip bomb: %v", err)
	}
	r.publish(namespace, typ, version, Options{}, samePerPlatform(data, platforms))
}

// AddManyEntries publishes namespace/type at version for the given
// platforms, each archive a valid zip of entries entries (at least 1): the
// provider binary as Add makes it (for the first platform), then entries-1
// tiny stored files "junk-0000001.txt", ... at the top level. SHA256SUMS
// lists it and is signed as for Add, so only a limit on the number of
// entries can catch it. All platforms share the same archive.
func (r *Registry) AddManyEntries(namespace, typ, version string, entries int, platforms ...string) {
	r.t.Helper()
	if len(platforms) == 0 {
		return
	}
	data, err := manyEntries(namespace, typ, version, platforms[0], entries)
	if err != nil {
		r.t.Fatalf("fakeregistry: build many-entries archive: %v", err)
	}
	r.publish(namespace, typ, version, Options{}, samePerPlatform(data, platforms))
}

// AddWithSize is like Add, but each archive is size bytes long (exactly,
// below 4 GiB; at least the ~200 bytes of zip structure): its one file
// (stored, not compressed) starts like Add's and continues with
// pseudo-random bytes seeded from provider, version and platform, so the
// archives are deterministic, differ per platform and do not compress.
func (r *Registry) AddWithSize(namespace, typ, version string, size int, platforms ...string) {
	r.t.Helper()
	archives := map[string][]byte{}
	for _, p := range platforms {
		data, err := sizedArchive(namespace, typ, version, p, size)
		if err != nil {
			r.t.Fatalf("fakeregistry: build archive: %v", err)
		}
		archives[p] = data
	}
	r.publish(namespace, typ, version, Options{}, archives)
}

func samePerPlatform(data []byte, platforms []string) map[string][]byte {
	archives := map[string][]byte{}
	for _, p := range platforms {
		archives[p] = data
	}
	return archives
}

// binaryName is the name of the provider binary inside an archive.
func binaryName(typ, version string) string {
	return "terraform-provider-" + typ + "_v" + version
}

// zeros is a block of zero bytes written repeatedly into zip bombs.
var zeros = make([]byte, 64<<10)

// zipBomb returns a zip of one deflated file named name holding size zeros.
func zipBomb(name string, size int64) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	// BestSpeed deflates zeros about 4 times faster than the default level
	// at nearly the same ratio.
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, flate.BestSpeed)
	})
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: modified}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	for left := size; left > 0; {
		n := min(left, int64(len(zeros)))
		if _, err := w.Write(zeros[:n]); err != nil {
			return nil, err
		}
		left -= n
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// manyEntries returns a zip of the provider binary and entries-1 tiny files.
func manyEntries(namespace, typ, version, platform string, entries int) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	if err := writeEntry(zw, zipEntry{
		name: binaryName(typ, version),
		mode: 0o755,
		body: binaryContent(namespace, typ, version, platform),
	}); err != nil {
		return nil, err
	}
	for i := 1; i < entries; i++ {
		h := &zip.FileHeader{Name: fmt.Sprintf("junk-%07d.txt", i), Method: zip.Store, Modified: modified}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte("x\n")); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sizedArchive returns a zip of size bytes holding one stored file.
func sizedArchive(namespace, typ, version, platform string, size int) ([]byte, error) {
	head := fmt.Sprintf("#!/bin/sh\n# fake provider %s/%s %s %s\n", namespace, typ, version, platform)
	// The zip structure around a stored file does not depend on its length
	// (below 4 GiB), so measure it with an empty file first.
	empty, err := storedZip(binaryName(typ, version), nil)
	if err != nil {
		return nil, err
	}
	content := make([]byte, max(size-len(empty), 0))
	n := copy(content, head)
	rand.NewChaCha8(sha256.Sum256([]byte(head))).Read(content[n:])
	return storedZip(binaryName(typ, version), content)
}

// storedZip returns a zip of one file named name holding content uncompressed.
func storedZip(name string, content []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: modified}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(content); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

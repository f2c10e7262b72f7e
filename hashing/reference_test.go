package hashing

import (
	"archive/zip"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/dirhash"
)

// The reference implementations the one-pass HashArchive is held to:
// dirhash itself, run once for the zip and once for its files.

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
		if f.FileInfo().IsDir() { // as installers decide: by mode, a trailing "/" included
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

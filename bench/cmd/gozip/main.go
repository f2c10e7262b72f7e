// Command gozip zips files as Go release tools (goreleaser) do: with
// archive/zip, each file deflated at archive/zip's default level under
// its base name. bench/run makes its corpus of real Go executables with
// it.
//
// Usage: gozip OUT.zip FILE...
package main

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "gozip: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: gozip OUT.zip FILE [FILE]")
	}
	out, err := os.Create(args[0])
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	for _, path := range args[1:] {
		if err := add(zw, path); err != nil {
			_ = out.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func add(zw *zip.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only
	info, err := f.Stat()
	if err != nil {
		return err
	}
	h, err := zip.FileInfoHeader(info)
	if err != nil {
		return err
	}
	h.Name = filepath.Base(path)
	h.Method = zip.Deflate
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("zip %s: %w", path, err)
	}
	return nil
}

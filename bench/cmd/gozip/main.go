// Command gozip zips files as Go release tools (goreleaser) do: with
// archive/zip, each file deflated at archive/zip's default level under
// its base name (bench/internal/gozip, which benchorigin's corpus of real
// Go executables also zips with). bench/run makes the h1 part's corpus of
// real Go executables with it.
//
// Usage: gozip OUT.zip FILE...
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfmirror/tfmirror/bench/internal/gozip"
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
	tmp, err := os.MkdirTemp(filepath.Dir(args[0]), ".gozip-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var entries []gozip.Entry
	for i, path := range args[1:] {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		s, err := gozip.Deflate(path, filepath.Join(tmp, fmt.Sprint(i)))
		if err != nil {
			return fmt.Errorf("zip %s: %w", path, err)
		}
		entries = append(entries, gozip.Entry{Name: filepath.Base(path), Mode: info.Mode().Perm(), Stream: s})
	}
	out, err := os.Create(args[0])
	if err != nil {
		return err
	}
	if err := gozip.Write(out, entries); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

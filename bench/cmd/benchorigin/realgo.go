package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/bench/internal/gozip"
)

// The "realgo" shape: a provider release made of real Go executables
// (-executables), zipped as goreleaser zips (bench/internal/gozip:
// archive/zip, deflate level 5). Every platform's zip takes the
// executables in turn, starting with the i-th for platform i, until it
// holds -sizes bytes of them unpacked (or all of them): its first
// executable is the provider's, named as goreleaser names a provider's
// binary (terraform-provider-TYPE_vVERSION, .exe on Windows), so that a
// build reads its Go build information as it does a real provider's; the
// others keep their base names. The executables are not built for the
// platform the zip is named after, and with fewer executables than
// platforms × size several zips share some of them (in another order,
// under another provider name); each executable is deflated once and
// copied into every zip that holds it, which gives the bytes archive/zip
// would write for it. Every zip still has its own bytes and digest, and
// hashing one inflates every byte of it. bench/README.md says so.

// Executable is one real executable of a "realgo" corpus, by content: the
// corpus's cache key changes when an executable does.
type Executable struct {
	Name   string `json:"name"` // its base name: its entry's name in a zip
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// readExecutables identifies the files at paths by name, size and SHA-256.
// Their base names must differ: they are the entries' names.
func readExecutables(paths []string) ([]Executable, error) {
	var exes []Executable
	seen := map[string]bool{}
	for _, path := range paths {
		name := filepath.Base(path)
		if seen[name] {
			return nil, fmt.Errorf("-executables: two executables named %s", name)
		}
		seen[name] = true
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		_ = f.Close() // read only
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("%s is empty", path)
		}
		exes = append(exes, Executable{Name: name, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return exes, nil
}

// realGoPicks returns, for each of the n packages, the indexes of the
// executables its zip holds, in order: the i-th first, then the next in
// turn until they make sizes[i] bytes or all are taken.
func realGoPicks(exes []Executable, n int, sizes []int64) [][]int {
	picks := make([][]int, n)
	for i := range n {
		var total int64
		for k := 0; k < len(exes) && (k == 0 || total < sizes[i]); k++ {
			e := (i + k) % len(exes)
			picks[i] = append(picks[i], e)
			total += exes[e].Size
		}
	}
	return picks
}

// providerExecutable is the name goreleaser gives a provider's binary.
func providerExecutable(typ, version, platform string) string {
	name := "terraform-provider-" + typ + "_v" + version
	if strings.HasPrefix(platform, "windows_") {
		name += ".exe"
	}
	return name
}

// generateRealGo writes the corpus of a "realgo" spec into dir.
func generateRealGo(dir string, spec Spec, c *Corpus) error {
	if len(spec.exePaths) != len(spec.Executables) {
		return errors.New("the executables' paths are unknown")
	}
	sizes, err := sizesFor(spec.Sizes, len(c.Packages), spec.Seed)
	if err != nil {
		return err
	}
	picks := realGoPicks(spec.Executables, len(c.Packages), sizes)
	raw := filepath.Join(dir, ".raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(raw) }()

	// Each executable a zip holds, deflated once.
	var used []int
	seen := map[int]bool{}
	for _, p := range picks {
		for _, e := range p {
			if !seen[e] {
				seen[e] = true
				used = append(used, e)
			}
		}
	}
	streams := make([]gozip.Stream, len(spec.Executables))
	err = onEveryCore(len(used), func(i int) error {
		e := used[i]
		s, err := gozip.Deflate(spec.exePaths[e], filepath.Join(raw, strconv.Itoa(e)))
		if err != nil {
			return err
		}
		if s.Size != spec.Executables[e].Size {
			return fmt.Errorf("%s changed while the corpus was made", spec.exePaths[e])
		}
		streams[e] = s
		return nil
	})
	if err != nil {
		return err
	}

	return onEveryCore(len(c.Packages), func(i int) error {
		p := &c.Packages[i]
		entries := make([]gozip.Entry, len(picks[i]))
		for k, e := range picks[i] {
			name := spec.Executables[e].Name
			if k == 0 {
				name = providerExecutable(p.Type, p.Version, p.Platform)
			}
			entries[k] = gozip.Entry{Name: name, Mode: 0o755, Stream: streams[e]}
			p.Unpacked += streams[e].Size
		}
		return writeRealGoZip(filepath.Join(dir, p.File), entries, p)
	})
}

// writeRealGoZip writes one package's zip and records its size and digest.
func writeRealGoZip(path string, entries []gozip.Entry, p *Package) error {
	return writePackageFile(path, p, func(w io.Writer) error { return gozip.Write(w, entries) })
}

// writePackageFile creates a package's file at path, has write fill it,
// and records its size and digest in p.
func writePackageFile(path string, p *Package, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // on errors; closed and checked below otherwise
	h := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(f, h)}
	if err := write(cw); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	p.Size = cw.n
	p.SHA256 = hex.EncodeToString(h.Sum(nil))
	return nil
}

// onEveryCore runs f(0) … f(n-1) on GOMAXPROCS workers and returns the
// first error.
func onEveryCore(n int, f func(i int) error) error {
	jobs := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range jobs {
				errs <- f(i)
			}
		})
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

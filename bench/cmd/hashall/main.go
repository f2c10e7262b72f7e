// Command hashall computes what a mirror build must compute for every
// archive, the SHA-256 of the zip (its "zh:" hash) and Go's dirhash of its
// entries (its "h1:" hash, which unpacks every entry), for a list of files,
// on GOMAXPROCS workers. It is the hashing half of the benchmark's
// "physical limit" (see bench/README.md).
//
// Usage: hashall [-decoder std|klauspost|fast|stream] [-h1only] [-v] [-cpuprofile FILE] [-list FILE] [FILE...]
//
// -decoder says how h1: is computed:
//
//   - std (the default): dirhash.HashZip, which inflates with the
//     standard library (compress/flate through archive/zip);
//   - klauspost: dirhash's Hash1 over archive/zip's entries inflated by
//     klauspost/compress's decoder, the one tfmirror shipped before its
//     own (kept here only to measure against);
//   - fast: hashing.HashArchive, what tfmirror ships: the same checks and
//     hashes, with its own Deflate decoder (hashing/internal/inflate);
//   - stream: what a build does while it downloads: the file is read once,
//     in 32 KiB writes, through SHA-256 and a hashing.StreamHasher (which
//     inflates each entry as its bytes arrive), then
//     hashing.HashArchiveStreamed summarizes from the streamed entries.
//
// All four give the same hashes (-v shows them). With -h1only, std and
// fast skip the zh: pass, so that the CPU is h1:'s alone.
//
// With -cpuprofile, a CPU profile of the hashing goes to FILE.
//
// With -list, file paths are read from FILE, one per line ("-" is stdin).
// It prints one JSON line: {"decoder":D,"files":N,"bytes":B,"seconds":S,
// "cpu_seconds":C,"user_seconds":U,"sys_seconds":Y,"workers":W}, where
// bytes are the zip files' and the CPU is the process's (user + system,
// from getrusage, so the whole run's), and for stream also "streamed": how
// many archives were summarized from the stream (the others fell back to
// hashing the file); with -v, also "zh:... h1:... PATH" for each file on
// stderr.
package main

import (
	"archive/zip"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	kflate "github.com/klauspost/compress/flate"
	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/hashing"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "hashall: %v\n", err)
		os.Exit(1)
	}
}

type result struct {
	path     string
	zh, h1   string
	bytes    int64
	streamed bool
	err      error
}

// decoders are the ways -decoder names of computing h1:.
var decoders = map[string]func(path string, zh bool) result{
	"std":       hashStd,
	"klauspost": hashKlauspost,
	"fast":      hashFast,
	"stream":    hashStream,
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hashall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.String("list", "", `file with one path per line ("-": standard input)`)
	verbose := fs.Bool("v", false, "print each file's hashes on standard error")
	decoder := fs.String("decoder", "std", "how h1: is computed: std (dirhash.HashZip), klauspost (dirhash over klauspost/compress's decoder), fast (hashing.HashArchive) or stream (hashing.StreamHasher)")
	h1only := fs.Bool("h1only", false, "skip the zh: pass (std, klauspost and fast)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the hashing to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	hash, ok := decoders[*decoder]
	if !ok {
		return fmt.Errorf("-decoder %q: want std, klauspost, fast or stream", *decoder)
	}
	paths := fs.Args()
	if *list != "" {
		more, err := readList(*list, stdin)
		if err != nil {
			return err
		}
		paths = append(paths, more...)
	}
	if len(paths) == 0 {
		return errors.New("no files to hash")
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }() // checked by StopCPUProfile's writes
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	workers := runtime.GOMAXPROCS(0)
	cpu0, err := cpuTime()
	if err != nil {
		return err
	}
	start := time.Now()
	jobs := make(chan string)
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range jobs {
				results <- hash(p, !*h1only)
			}
		})
	}
	go func() {
		for _, p := range paths {
			jobs <- p
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	var total int64
	var streamed int
	var errs []error
	for r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		total += r.bytes
		if r.streamed {
			streamed++
		}
		if *verbose {
			fmt.Fprintf(stderr, "%s %s %s\n", r.zh, r.h1, r.path)
		}
	}
	elapsed := time.Since(start)
	cpu1, err := cpuTime()
	if err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	report := map[string]any{
		"decoder": *decoder, "files": len(paths), "bytes": total, "seconds": elapsed.Seconds(), "workers": workers,
		"cpu_seconds":  (cpu1.user + cpu1.sys - cpu0.user - cpu0.sys).Seconds(),
		"user_seconds": (cpu1.user - cpu0.user).Seconds(), "sys_seconds": (cpu1.sys - cpu0.sys).Seconds(),
	}
	if *decoder == "stream" {
		report["streamed"] = streamed
	}
	out, err := json.Marshal(report)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(out))
	return nil
}

// hashStd computes both hashes of one archive, as separate passes, the
// way a build that streams the download through SHA-256 and then checks
// the zip does, with dirhash.HashZip for h1:.
func hashStd(path string, zh bool) result {
	r := zhOf(path, zh)
	if r.err != nil {
		return r
	}
	if r.h1, r.err = dirhash.HashZip(path, dirhash.Hash1); r.err != nil {
		r.err = fmt.Errorf("h1 of %s: %w", path, r.err)
	}
	return r
}

// hashKlauspost is hashStd with klauspost/compress's decoder registered
// on the zip reader dirhash's Hash1 reads the entries from.
func hashKlauspost(path string, zh bool) result {
	r := zhOf(path, zh)
	if r.err != nil {
		return r
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		r.err = err
		return r
	}
	defer func() { _ = zr.Close() }() // read only
	zr.RegisterDecompressor(zip.Deflate, kflate.NewReader)
	var names []string
	entries := make(map[string]*zip.File, len(zr.File))
	for _, f := range zr.File {
		names = append(names, f.Name)
		entries[f.Name] = f
	}
	r.h1, r.err = dirhash.Hash1(names, func(name string) (io.ReadCloser, error) { return entries[name].Open() })
	if r.err != nil {
		r.err = fmt.Errorf("h1 of %s: %w", path, r.err)
	}
	return r
}

// hashFast is hashStd with hashing.HashArchive for h1:, as tfmirror
// computes it from a file.
func hashFast(path string, zh bool) result {
	r := zhOf(path, zh)
	if r.err != nil {
		return r
	}
	var sum [sha256.Size]byte // HashArchive only copies it into ZH
	sums, err := hashing.HashArchive(path, sum, hashing.DefaultZipLimits)
	if err != nil {
		r.err = fmt.Errorf("h1 of %s: %w", path, err)
		return r
	}
	r.h1 = string(sums.H1)
	return r
}

// hashStream reads the file once through SHA-256 and a StreamHasher, in
// 32 KiB writes as a download arrives, then summarizes.
func hashStream(path string, _ bool) result {
	r := result{path: path}
	f, err := os.Open(path)
	if err != nil {
		r.err = err
		return r
	}
	defer func() { _ = f.Close() }() // read only
	h := sha256.New()
	s := hashing.NewStreamHasher(hashing.DefaultZipLimits, hashing.StreamOptions{})
	if r.bytes, err = io.CopyBuffer(io.MultiWriter(h, s), struct{ io.Reader }{f}, make([]byte, 32<<10)); err != nil {
		s.Abandon("read failed")
		r.err = fmt.Errorf("read %s: %w", path, err)
		return r
	}
	res := s.Close()
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	sums, err := hashing.HashArchiveStreamed(path, sum, hashing.DefaultZipLimits, res)
	if err != nil {
		r.err = fmt.Errorf("h1 of %s: %w", path, err)
		return r
	}
	r.zh, r.h1, r.streamed = string(sums.ZH), string(sums.H1), res.Summarized
	return r
}

// zhOf reads the file through SHA-256 for its zh: hash, if zh is set.
func zhOf(path string, zh bool) result {
	r := result{path: path}
	if !zh {
		fi, err := os.Stat(path)
		if err != nil {
			r.err = err
			return r
		}
		r.bytes = fi.Size()
		return r
	}
	f, err := os.Open(path)
	if err != nil {
		r.err = err
		return r
	}
	defer func() { _ = f.Close() }() // read only
	h := sha256.New()
	if r.bytes, err = io.Copy(h, f); err != nil {
		r.err = fmt.Errorf("read %s: %w", path, err)
		return r
	}
	r.zh = "zh:" + hex.EncodeToString(h.Sum(nil))
	return r
}

func readList(name string, stdin io.Reader) ([]string, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }() // read only
		r = f
	}
	var paths []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			paths = append(paths, line)
		}
	}
	return paths, sc.Err()
}

// Command hashall computes what a mirror build must compute for every
// archive, the SHA-256 of the zip (its "zh:" hash) and Go's dirhash of its
// entries (its "h1:" hash, which unpacks every entry), for a list of files,
// on GOMAXPROCS workers. It is the hashing half of the benchmark's
// "physical limit" (see BENCHMARKS.md).
//
// Usage: hashall [-v] [-list FILE] [FILE...]
//
// With -list, file paths are read from FILE, one per line ("-" is stdin).
// It prints one JSON line: {"files":N,"bytes":B,"seconds":S,"workers":W};
// with -v, also "zh:... h1:... PATH" for each file on stderr.
package main

import (
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
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "hashall: %v\n", err)
		os.Exit(1)
	}
}

type result struct {
	path   string
	zh, h1 string
	bytes  int64
	err    error
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hashall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.String("list", "", `file with one path per line ("-": standard input)`)
	verbose := fs.Bool("v", false, "print each file's hashes on standard error")
	if err := fs.Parse(args); err != nil {
		return err
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

	workers := runtime.GOMAXPROCS(0)
	start := time.Now()
	jobs := make(chan string)
	results := make(chan result)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for p := range jobs {
				results <- hashFile(p)
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
	var errs []error
	for r := range results {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		total += r.bytes
		if *verbose {
			fmt.Fprintf(stderr, "%s %s %s\n", r.zh, r.h1, r.path)
		}
	}
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}
	out, err := json.Marshal(map[string]any{
		"files": len(paths), "bytes": total, "seconds": elapsed.Seconds(), "workers": workers,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(out))
	return nil
}

// hashFile computes both hashes of one archive, as separate passes, the way
// a build that streams the download through SHA-256 and then checks the
// zip does.
func hashFile(path string) result {
	r := result{path: path}
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
	if r.h1, err = dirhash.HashZip(path, dirhash.Hash1); err != nil {
		r.err = fmt.Errorf("h1 of %s: %w", path, err)
	}
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

// Command benchorigin is the origin registry of tfmirror's benchmark
// (bench/run, bench/README.md).
//
// It generates a deterministic synthetic corpus of provider packages, or
// reuses it from --cache, and serves it on 127.0.0.1 over TLS as an
// OpenTofu provider registry (protocol v1) under
// registry.opentofu.org/NAMESPACE/pN, through a network profile: a delay
// before every response's headers and a bandwidth cap per connection
// (--delay, --rate), or none (--loopback).
//
// Archives are valid zips. By default each holds one semi-compressible
// pseudo-binary "terraform-provider-pN_vX" (deflated, about half random
// bytes). With -shape gobinary they are shaped like hashicorp/aws's: an
// executable that deflates about 4.5:1 and three small text files, the
// executable's compressed stream made once per -distinct executable and
// shared by the platforms' zips (gobinary.go). With -shape fleet they are
// tiny, and the corpus also holds the network mirror tree a build of all of
// it would write, so that a build into a copy of it is a no-op
// (ORIGIN_TREE; fleet.go). With -shape realgo they are made of the real Go
// executables -executables names, zipped as goreleaser zips (realgo.go).
// Every version has a SHA256SUMS signed by an
// OpenPGP key advertised in the download documents: a throwaway key made at
// startup, or for a fleet the key kept with the corpus, which signed the
// signatures its tree holds. Archives are served with
// http.ServeContent, so Range requests work. GET /_stats returns counters as
// JSON ({"requests":..,"archive_requests":..,"range_requests":..,
// "archive_bytes":..,"bytes":..,"versions_requests":..,
// "download_requests":..,"sums_requests":..,"other_requests":..}); it is
// neither delayed nor counted. Download documents are made on request.
//
// Once listening it writes into --state-dir: ca.pem (the CA to trust),
// urls.txt and files.txt (every archive's URL and path), tfmirror.hcl (a
// manifest selecting the whole corpus), tofu/main.tf and tofu.tfrc (the same
// selection, newest version of each provider, for "tofu providers mirror"),
// and origin.env (KEY=VALUE lines, written last); it also prints the same
// facts as one JSON line on stdout. It serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/bench/internal/benchenv"
)

func main() {
	os.Exit(benchenv.Main("benchorigin", func(ctx context.Context, args []string) error {
		return run(ctx, args, os.Stdout, os.Stderr)
	}))
}

type options struct {
	spec      Spec
	platforms string
	cache     string
	stateDir  string
	delay     time.Duration
	rate      string
	loopback  bool
	http2     bool
	genOnly   bool
	exes      string
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("benchorigin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cache, "cache", "", "directory of generated corpora (required)")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory for ca.pem, urls.txt, client configurations and origin.env (required unless -generate-only)")
	fs.StringVar(&o.spec.Namespace, "namespace", "bench", "provider namespace")
	fs.IntVar(&o.spec.Providers, "providers", 3, "number of providers (p1..pN)")
	fs.IntVar(&o.spec.Versions, "versions", 1, "versions per provider (1.0.0, 1.1.0, ...)")
	fs.StringVar(&o.platforms, "platforms", "linux_amd64,darwin_arm64", "comma-separated platforms of every version")
	fs.StringVar(&o.spec.Sizes, "sizes", "1M-2M", `archive sizes: a range "A-B" (spread on a log scale) or a list "A,B,C" (cycled); K, M, G are powers of 1000`)
	fs.Uint64Var(&o.spec.Seed, "seed", 1, "seed of the generated content")
	fs.StringVar(&o.spec.Shape, "shape", "", `what the archives are like: "" (one semi-compressible pseudo-binary each), "gobinary" (large releases like hashicorp/aws's: an executable that deflates about 4.5:1 and small text files) or "fleet" (tiny archives, and the mirror tree holding them all, for no-op builds) or "realgo" (zips of real Go executables, -executables)`)
	fs.StringVar(&o.exes, "executables", "", "with -shape realgo: comma-separated paths of the real Go executables the zips are made of (-sizes: how many bytes of them each zip holds unpacked, at least one executable)")
	fs.IntVar(&o.spec.Distinct, "distinct", 0, "with -shape gobinary: different executables per version, compressed once each and shared by its platforms' zips in turn (default 3)")
	fs.DurationVar(&o.delay, "delay", 40*time.Millisecond, "delay before every response's headers")
	fs.StringVar(&o.rate, "rate", "30M", "bandwidth cap of each connection, bytes per second (K, M, G suffixes; 0: none)")
	fs.BoolVar(&o.loopback, "loopback", false, "plain loopback: no delay, no bandwidth cap")
	fs.BoolVar(&o.http2, "http2", false, "also offer HTTP/2 (all downloads then share one capped connection)")
	fs.BoolVar(&o.genOnly, "generate-only", false, "generate the corpus (if not cached), print its directory and exit")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.cache == "" || (o.stateDir == "" && !o.genOnly) {
		return nil, errors.New("-cache and -state-dir are required")
	}
	o.spec.Generator = generatorVersion
	sizesSet := false
	fs.Visit(func(f *flag.Flag) { sizesSet = sizesSet || f.Name == "sizes" })
	switch o.spec.Shape {
	case ShapeGoBinary:
		if o.spec.Distinct == 0 {
			o.spec.Distinct = 3
		}
	case ShapeFleet:
		if !sizesSet {
			o.spec.Sizes = "" // its archives are tiny
		}
	}
	if o.exes != "" {
		o.spec.exePaths = strings.Split(o.exes, ",")
		exes, err := readExecutables(o.spec.exePaths)
		if err != nil {
			return nil, err
		}
		o.spec.Executables = exes
	}
	o.spec.Platforms = strings.Split(o.platforms, ",")
	if o.loopback {
		o.delay, o.rate = 0, "0"
	}
	if o.delay < 0 {
		return nil, errors.New("-delay must not be negative")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	rate, err := parseSize(o.rate)
	if err != nil {
		return fmt.Errorf("-rate: %w", err)
	}
	corpus, err := loadOrGenerate(o.cache, o.spec, stderr)
	if err != nil {
		return fmt.Errorf("corpus: %w", err)
	}
	if o.genOnly {
		fmt.Fprintln(stdout, corpus.Dir)
		return nil
	}

	var sig *signer
	if corpus.Key != "" {
		sig, err = loadSigner(filepath.Join(corpus.Dir, corpus.Key))
	} else {
		sig, err = newSigner()
	}
	if err != nil {
		return err
	}
	tlsConfig, caPEM, err := newTLS()
	if err != nil {
		return fmt.Errorf("make TLS certificates: %w", err)
	}
	handler, err := newOrigin(corpus, sig, o.delay)
	if err != nil {
		return err
	}

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if rate > 0 {
		ln = pacedListener{Listener: ln, rate: float64(rate)}
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(o.http2)
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         tlsConfig,
		Protocols:         &protocols,
		ReadHeaderTimeout: 30 * time.Second,
	}
	base := "https://" + ln.Addr().String()
	info := map[string]string{
		"ORIGIN_URL":            base,
		"ORIGIN_SERVICES":       base + "/v1/providers/",
		"ORIGIN_STATS":          base + "/_stats",
		"ORIGIN_CA":             filepath.Join(o.stateDir, "ca.pem"),
		"ORIGIN_URLS":           filepath.Join(o.stateDir, "urls.txt"),
		"ORIGIN_FILES":          filepath.Join(o.stateDir, "files.txt"),
		"ORIGIN_MANIFEST":       filepath.Join(o.stateDir, "tfmirror.hcl"),
		"ORIGIN_TOFU_DIR":       filepath.Join(o.stateDir, "tofu"),
		"ORIGIN_TOFU_RC":        filepath.Join(o.stateDir, "tofu.tfrc"),
		"ORIGIN_CORPUS":         corpus.Dir,
		"ORIGIN_ARCHIVES":       strconv.Itoa(len(corpus.Packages)),
		"ORIGIN_ARCHIVE_BYTES":  strconv.FormatInt(corpus.Bytes(), 10),
		"ORIGIN_PROVIDERS":      strconv.Itoa(corpus.Spec.Providers),
		"ORIGIN_VERSIONS":       strconv.Itoa(corpus.Spec.Versions),
		"ORIGIN_PLATFORMS":      strings.Join(corpus.Spec.Platforms, ","),
		"ORIGIN_SIZES":          corpus.Spec.Sizes,
		"ORIGIN_DELAY_MS":       strconv.FormatInt(o.delay.Milliseconds(), 10),
		"ORIGIN_RATE":           strconv.FormatInt(rate, 10),
		"ORIGIN_PID":            strconv.Itoa(os.Getpid()),
		"ORIGIN_SHAPE":          corpus.Spec.Shape,
		"ORIGIN_DISTINCT":       strconv.Itoa(corpus.Spec.Distinct),
		"ORIGIN_UNPACKED_BYTES": strconv.FormatInt(corpus.Unpacked(), 10),
	}
	if corpus.Tree != "" {
		info["ORIGIN_TREE"] = filepath.Join(corpus.Dir, corpus.Tree)
	}
	if len(corpus.Spec.Executables) > 0 {
		names := make([]string, len(corpus.Spec.Executables))
		for i, e := range corpus.Spec.Executables {
			names[i] = fmt.Sprintf("%s (%.1f MB)", e.Name, float64(e.Size)/1e6)
		}
		info["ORIGIN_EXECUTABLES"] = strings.Join(names, ",")
	}
	if err := writeState(o.stateDir, corpus, base, caPEM, info); err != nil {
		_ = ln.Close()
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	line, _ := json.Marshal(info) // a map of strings always encodes
	fmt.Fprintln(stdout, string(line))
	fmt.Fprintf(stderr, "benchorigin: serving %d archives (%.1f MB) at %s (delay %s, rate %s/s per connection)\n",
		len(corpus.Packages), float64(corpus.Bytes())/1e6, base, o.delay, o.rate)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// The benchmark is over: drop connections at once.
	_ = srv.Close()
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// writeState writes the files that clients of the origin need, origin.env
// last (atomically), so its presence means the origin is ready.
func writeState(dir string, c *Corpus, base string, caPEM []byte, info map[string]string) error {
	if err := os.MkdirAll(filepath.Join(dir, "tofu"), 0o755); err != nil {
		return err
	}
	var urls, files strings.Builder
	newest := map[string]string{}
	var types []string
	for _, p := range c.Packages {
		fmt.Fprintf(&urls, "%s%s%s\n", base, releasePath(c.Spec.Namespace, p.Type, p.Version), filepath.Base(p.File))
		fmt.Fprintf(&files, "%s\n", filepath.Join(c.Dir, p.File))
		if _, ok := newest[p.Type]; !ok {
			types = append(types, p.Type)
		}
		newest[p.Type] = p.Version // versions come in increasing order
	}
	services := base + "/v1/providers/"
	hostBlock := fmt.Sprintf("host \"registry.opentofu.org\" {\n  services = {\n    \"providers.v1\" = %q\n  }\n}\n", services)

	var manifest strings.Builder
	fmt.Fprintf(&manifest, "# The whole benchmark corpus, written by benchorigin.\nplatforms = [%s]\n\n", quoteList(c.Spec.Platforms))
	for _, t := range types {
		fmt.Fprintf(&manifest, "provider \"%s/%s\" {\n  newest = %d\n}\n\n", c.Spec.Namespace, t, c.Spec.Versions)
	}
	manifest.WriteString(hostBlock)

	var tf strings.Builder
	tf.WriteString("# The newest version of every provider of the benchmark corpus, written by benchorigin.\nterraform {\n  required_providers {\n")
	for _, t := range types {
		fmt.Fprintf(&tf, "    %s = {\n      source  = \"registry.opentofu.org/%s/%s\"\n      version = \"= %s\"\n    }\n", t, c.Spec.Namespace, t, newest[t])
	}
	tf.WriteString("  }\n}\n")

	for name, data := range map[string]string{
		"ca.pem":       string(caPEM),
		"urls.txt":     urls.String(),
		"files.txt":    files.String(),
		"tfmirror.hcl": manifest.String(),
		"tofu/main.tf": tf.String(),
		"tofu.tfrc":    hostBlock,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return benchenv.Write(dir, "origin.env", info)
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

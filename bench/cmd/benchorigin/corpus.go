package main

import (
	"archive/zip"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// generatorVersion changes whenever the bytes the generator makes for a
// spec change, so that a cached corpus is never reused for a new recipe.
const generatorVersion = 4 // 2: fleet trees hold SBOMs; 3: and the signer's fingerprint; 4: catalog.json lists the signers

// Spec says what corpus to make. Two equal specs give byte-identical
// corpora (with the same Go version), and share one cache directory.
type Spec struct {
	Generator int `json:"generator"`
	// Shape is what the archives are like: "" (the default: one
	// semi-compressible pseudo-binary per zip), ShapeGoBinary (large
	// releases like hashicorp/aws's; gobinary.go) or ShapeFleet (many
	// tiny releases already mirrored; fleet.go).
	Shape     string   `json:"shape,omitempty"`
	Namespace string   `json:"namespace"`
	Providers int      `json:"providers"`
	Versions  int      `json:"versions"`
	Platforms []string `json:"platforms"`
	Sizes     string   `json:"sizes"`
	Seed      uint64   `json:"seed"`
	// Distinct is, for ShapeGoBinary, how many different executables
	// each version has (its platforms take them in turn).
	Distinct int `json:"distinct,omitempty"`
	// Executables are, for ShapeRealGo, the real Go executables the zips
	// are made of, by content (realgo.go); exePaths where they are.
	Executables []Executable `json:"executables,omitempty"`
	exePaths    []string
}

// The shapes of a corpus besides the default.
const (
	ShapeGoBinary = "gobinary"
	ShapeFleet    = "fleet"
	ShapeRealGo   = "realgo"
)

// Package is one archive of the corpus.
type Package struct {
	Type     string `json:"type"`     // "p1"
	Version  string `json:"version"`  // "1.0.0"
	Platform string `json:"platform"` // "linux_amd64"
	File     string `json:"file"`     // path relative to the corpus directory
	Size     int64  `json:"size"`     // bytes of the zip
	Unpacked int64  `json:"unpacked"` // bytes of the file inside it
	SHA256   string `json:"sha256"`   // hex
}

// Corpus is a generated corpus on disk. corpus.json, written last, holds it.
type Corpus struct {
	Spec     Spec      `json:"spec"`
	Packages []Package `json:"packages"`
	// Sums maps "type/version" to the path of its SHA256SUMS file
	// (relative to Dir).
	Sums map[string]string `json:"sums"`
	// Sigs maps "type/version" to the path of the signature of its
	// SHA256SUMS by the corpus's own key (Key), for corpora whose
	// signatures are part of what is generated (ShapeFleet: the mirror
	// tree holds them); otherwise the origin signs with a key of its own.
	Sigs map[string]string `json:"sigs,omitempty"`
	// Key is the path of the armored private key behind Sigs.
	Key string `json:"key,omitempty"`
	// Tree is the path of the mirror tree of a ShapeFleet corpus.
	Tree string `json:"tree,omitempty"`

	Dir string `json:"-"`
}

// key names the cache directory of a spec.
func (s Spec) key() string {
	data, _ := json.Marshal(s) // a struct of strings and numbers always encodes
	sum := sha256.Sum256(data)
	return "corpus-" + hex.EncodeToString(sum[:6])
}

// Bytes returns the total size of the corpus's archives.
func (c *Corpus) Bytes() int64 {
	var n int64
	for _, p := range c.Packages {
		n += p.Size
	}
	return n
}

// Unpacked returns the total size of what the archives unpack to.
func (c *Corpus) Unpacked() int64 {
	var n int64
	for _, p := range c.Packages {
		n += p.Unpacked
	}
	return n
}

// zipName is the registry file name of a package.
func zipName(typ, version, platform string) string {
	return "terraform-provider-" + typ + "_" + version + "_" + platform + ".zip"
}

// sumsName is the name of a version's checksum file.
func sumsName(typ, version string) string {
	return "terraform-provider-" + typ + "_" + version + "_SHA256SUMS"
}

// versionName returns the i-th (0-based) version of every provider.
func versionName(i int) string { return "1." + strconv.Itoa(i) + ".0" }

// parseSize parses "5.5M", "200M", "1G", "300K" or "1234" (bytes). The
// suffixes are decimal (K = 1000), as in MB/s; "Ki", "Mi", "Gi" are binary.
func parseSize(s string) (int64, error) {
	s = strings.TrimSuffix(strings.TrimSpace(s), "B")
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = rest, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return int64(f * mult), nil
}

// sizesFor returns the archive size of each of n packages: for "A-B", n
// sizes spread evenly on a log scale from A to B, in a deterministic
// shuffled order (so that the large ones are not all in the last provider);
// for "A,B,C", the list repeated in order.
func sizesFor(spec string, n int, seed uint64) ([]int64, error) {
	if lo, hi, ok := strings.Cut(spec, "-"); ok {
		a, err := parseSize(lo)
		if err != nil {
			return nil, err
		}
		b, err := parseSize(hi)
		if err != nil {
			return nil, err
		}
		if a <= 0 || b < a {
			return nil, fmt.Errorf("invalid size range %q: want 0 < A <= B", spec)
		}
		sizes := make([]int64, n)
		for i := range sizes {
			frac := 1.0
			if n > 1 {
				frac = float64(i) / float64(n-1)
			}
			sizes[i] = int64(float64(a) * math.Pow(float64(b)/float64(a), frac))
		}
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		rng.Shuffle(n, func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
		return sizes, nil
	}
	var list []int64
	for part := range strings.SplitSeq(spec, ",") {
		v, err := parseSize(part)
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, fmt.Errorf("invalid size %q: must be positive", part)
		}
		list = append(list, v)
	}
	sizes := make([]int64, n)
	for i := range sizes {
		sizes[i] = list[i%len(list)]
	}
	return sizes, nil
}

// validate checks a spec before anything is generated.
func (s Spec) validate() error {
	switch {
	case s.Providers < 1:
		return errors.New("--providers must be at least 1")
	case s.Versions < 1:
		return errors.New("--versions must be at least 1")
	case len(s.Platforms) == 0:
		return errors.New("--platforms must name at least one platform")
	case s.Namespace == "" || strings.ContainsAny(s.Namespace, "/\\. "):
		return fmt.Errorf("invalid --namespace %q", s.Namespace)
	case s.Shape != "" && s.Shape != ShapeGoBinary && s.Shape != ShapeFleet && s.Shape != ShapeRealGo:
		return fmt.Errorf("invalid --shape %q", s.Shape)
	case s.Shape == ShapeRealGo && len(s.Executables) == 0:
		return errors.New("--shape realgo needs --executables")
	case s.Shape != ShapeRealGo && len(s.Executables) != 0:
		return errors.New("--executables is for --shape realgo only")
	case s.Shape == ShapeGoBinary && s.Distinct < 1:
		return errors.New("--distinct must be at least 1")
	case s.Shape != ShapeGoBinary && s.Distinct != 0:
		return errors.New("--distinct is for --shape gobinary only")
	}
	for _, p := range s.Platforms {
		goos, arch, ok := strings.Cut(p, "_")
		if !ok || goos == "" || arch == "" || strings.ContainsAny(p, "/\\. ") {
			return fmt.Errorf("invalid platform %q: want os_arch", p)
		}
	}
	if s.Shape == ShapeFleet {
		if s.Sizes != "" {
			return errors.New("--sizes is not for --shape fleet (its archives are tiny)")
		}
		return nil
	}
	_, err := sizesFor(s.Sizes, 1, 0)
	return err
}

// loadOrGenerate returns the corpus of spec under cacheDir, generating it
// first unless a complete copy is there already. log receives progress.
func loadOrGenerate(cacheDir string, spec Spec, log io.Writer) (*Corpus, error) {
	c, err := loadOrGenerateFiles(cacheDir, spec, log)
	if err != nil || c.Tree == "" {
		return c, err
	}
	return c, refreshFleetPage(c)
}

func loadOrGenerateFiles(cacheDir string, spec Spec, log io.Writer) (*Corpus, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	dir := filepath.Join(cacheDir, spec.key())
	if c, err := load(dir, spec); err == nil {
		return c, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(cacheDir, spec.key()+".tmp-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // after a successful rename there is nothing left

	start := time.Now()
	c, err := generate(tmp, spec)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process may have finished the same corpus first.
		if c2, err2 := load(dir, spec); err2 == nil {
			return c2, nil
		}
		return nil, fmt.Errorf("publish corpus: %w", err)
	}
	c.Dir = dir
	fmt.Fprintf(log, "benchorigin: generated %d archives (%.1f MB) in %s in %.1fs\n",
		len(c.Packages), float64(c.Bytes())/1e6, dir, time.Since(start).Seconds())
	return c, nil
}

// load reads a complete corpus from dir and checks it matches spec and that
// its archives are all there with the recorded sizes.
func load(dir string, spec Spec) (*Corpus, error) {
	data, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	if err != nil {
		return nil, err
	}
	var c Corpus
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("read corpus.json: %w", err)
	}
	if !slices.Equal(c.Spec.Platforms, spec.Platforms) || c.Spec.key() != spec.key() {
		return nil, errors.New("corpus.json is for another spec")
	}
	for _, p := range c.Packages {
		fi, err := os.Stat(filepath.Join(dir, p.File))
		if err != nil {
			return nil, err
		}
		if fi.Size() != p.Size {
			return nil, fmt.Errorf("%s: size %d, want %d", p.File, fi.Size(), p.Size)
		}
	}
	c.Dir = dir
	return &c, nil
}

// generate writes every archive and SHA256SUMS of spec into dir, then
// corpus.json.
func generate(dir string, spec Spec) (*Corpus, error) {
	c := &Corpus{Spec: spec, Sums: map[string]string{}}
	if spec.Shape == ShapeFleet {
		if err := generateFleet(dir, c); err != nil {
			return nil, err
		}
		return c, writeCorpusJSON(dir, c)
	}
	for p := 1; p <= spec.Providers; p++ {
		for v := range spec.Versions {
			for _, platform := range spec.Platforms {
				typ, ver := "p"+strconv.Itoa(p), versionName(v)
				c.Packages = append(c.Packages, Package{
					Type: typ, Version: ver, Platform: platform,
					File: filepath.Join(spec.Namespace, typ, ver, zipName(typ, ver, platform)),
				})
			}
		}
	}
	var err error
	switch spec.Shape {
	case ShapeGoBinary:
		err = generateGoBinary(dir, spec, c)
	case ShapeRealGo:
		err = generateRealGo(dir, spec, c)
	default:
		err = generateSemi(dir, spec, c)
	}
	if err != nil {
		return nil, err
	}

	// One SHA256SUMS per version.
	for k, data := range sumsFiles(c.Packages) {
		typ, ver, _ := strings.Cut(k, "/")
		rel := filepath.Join(spec.Namespace, typ, ver, sumsName(typ, ver))
		if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
			return nil, err
		}
		c.Sums[k] = rel
	}
	return c, writeCorpusJSON(dir, c)
}

// sumsFiles returns the SHA256SUMS of every "type/version" of pkgs, lines
// sorted (by digest, then name) as this generator always wrote them.
func sumsFiles(pkgs []Package) map[string][]byte {
	lines := map[string][]string{}
	for _, p := range pkgs {
		k := p.Type + "/" + p.Version
		lines[k] = append(lines[k], p.SHA256+"  "+filepath.Base(p.File)+"\n")
	}
	out := make(map[string][]byte, len(lines))
	for k, ls := range lines {
		slices.Sort(ls)
		out[k] = []byte(strings.Join(ls, ""))
	}
	return out
}

func writeCorpusJSON(dir string, c *Corpus) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "corpus.json"), append(data, '\n'), 0o644)
}

// generateSemi writes the archives of the default shape, each of one
// semi-compressible pseudo-binary, on every core.
func generateSemi(dir string, spec Spec, c *Corpus) error {
	sizes, err := sizesFor(spec.Sizes, len(c.Packages), spec.Seed)
	if err != nil {
		return err
	}
	return onEveryCore(len(c.Packages), func(i int) error {
		return writeArchive(dir, spec, &c.Packages[i], sizes[i])
	})
}

// modified is the fixed modification time of every zip entry.
var modified = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// compressionLevel trades generation time (about 75 MB/s of content per
// core) for a realistic ratio; BestSpeed compresses the mix much worse.
const compressionLevel = 3

// blockSize is the unit in which the provider binary is generated.
const blockSize = 32 << 10

// writeArchive writes one package's zip, of about size bytes, and records
// its size and digest in p.
func writeArchive(dir string, spec Spec, p *Package, size int64) error {
	return writePackageFile(filepath.Join(dir, p.File), p, func(file io.Writer) error {
		cw := &countingWriter{w: file}
		return writeArchiveZip(cw, spec, p, size)
	})
}

// writeArchiveZip writes the zip of writeArchive into cw.
func writeArchiveZip(cw *countingWriter, spec Spec, p *Package, size int64) error {
	zw := zip.NewWriter(cw)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, compressionLevel)
	})
	hdr := &zip.FileHeader{
		Name:     "terraform-provider-" + p.Type + "_v" + p.Version,
		Method:   zip.Deflate,
		Modified: modified,
	}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return err
	}
	g := newContentGen(spec.Seed, p.Type, p.Version, p.Platform)
	// The deflater buffers, so cw lags behind what was written by at most
	// a few blocks; the archive ends up a little larger than size.
	for cw.n < size {
		n, err := w.Write(g.block())
		if err != nil {
			return err
		}
		p.Unpacked += int64(n)
	}
	return zw.Close()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// contentGen makes a semi-compressible pseudo-binary: about a third of its
// blocks are random bytes (incompressible, like machine code and embedded
// compressed data), the rest a stream of words from a small per-archive
// vocabulary (like symbol tables and strings), which deflate shrinks to
// about a quarter, with real literal and match decoding to do when the
// archive is unpacked or hashed. The whole deflates to about half its size.
type contentGen struct {
	rng   *rand.Rand
	src   *rand.ChaCha8
	words [][]byte
	buf   []byte
}

func newContentGen(seed uint64, typ, version, platform string) *contentGen {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d/%s/%s/%s", seed, typ, version, platform)))
	src := rand.NewChaCha8(sum)
	g := &contentGen{rng: rand.New(src), src: src, buf: make([]byte, blockSize, blockSize+128)}
	const alphabet = "abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./"
	for range 256 {
		w := make([]byte, 3+g.rng.IntN(12))
		for i := range w {
			w[i] = alphabet[g.rng.IntN(len(alphabet))]
		}
		g.words = append(g.words, w)
	}
	return g
}

// block returns the next block; it is valid until the next call.
func (g *contentGen) block() []byte {
	b := g.buf[:0]
	if g.rng.IntN(20) < 7 {
		b = b[:blockSize]
		_, _ = g.src.Read(b) // never fails
		return b
	}
	for len(b) < blockSize {
		// One 64-bit draw gives seven words (8 bits each), each followed
		// by one of two separators (1 bit).
		r := g.src.Uint64()
		for range 7 {
			b = append(b, g.words[r&0xff]...)
			b = append(b, byte(r>>8)&1)
			r >>= 9
		}
	}
	return b[:blockSize]
}

package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// The "gobinary" shape: archives shaped like the releases of a large Go
// provider (hashicorp/aws): few and large, each a zip of one executable
// that deflates about 4.5 to 1 (machine code that repeats itself, as
// generated code does, symbol and string tables, line tables, a little
// embedded compressed data) and three small text files.
//
// Deflating gigabytes on two cores is slow, so each version has only
// Spec.Distinct different executables (sizes from Spec.Sizes), each
// compressed once into a raw deflate stream; every platform's zip takes
// one of them (platform i the (i mod Distinct)-th) with zip.Writer.CreateRaw,
// next to its own small files. So every zip has its own bytes and digest,
// and hashing one still inflates every byte of it; only the generator saves
// the work. bench/README.md says so.

// gobinaryLevel is the deflate level of the executable: archive/zip's
// default, the one release tools that use it (goreleaser) get.
const gobinaryLevel = 5

// segmentSize is the unit compressed in parallel: each segment is deflated
// on its own and ends with a sync flush, so the segments concatenated are
// one deflate stream (as pigz makes them). Matches never cross a segment
// boundary, which costs nothing measurable at this size.
var segmentSize = 4 << 20 // a variable for the tests

// rawStream is a compressed executable: a raw deflate stream on disk.
type rawStream struct {
	path       string
	crc        uint32
	size, comp int64 // uncompressed and compressed bytes
}

// generateGoBinary writes the corpus of a "gobinary" spec into dir.
func generateGoBinary(dir string, spec Spec, c *Corpus) error {
	releases := spec.Providers * spec.Versions
	sizes, err := sizesFor(spec.Sizes, releases*spec.Distinct, spec.Seed)
	if err != nil {
		return err
	}
	raw := filepath.Join(dir, ".raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(raw) }()

	streams := map[string][]rawStream{} // "type/version" -> its executables
	for r := range releases {
		p := c.Packages[r*len(spec.Platforms)]
		k := p.Type + "/" + p.Version
		for d := range spec.Distinct {
			seed := fmt.Sprintf("%d/%s/%s/%d", spec.Seed, p.Type, p.Version, d)
			s, err := compressExecutable(filepath.Join(raw, p.Type+"_"+p.Version+"_"+strconv.Itoa(d)), seed, sizes[r*spec.Distinct+d])
			if err != nil {
				return err
			}
			streams[k] = append(streams[k], s)
		}
	}

	return onEveryCore(len(c.Packages), func(i int) error {
		p := &c.Packages[i]
		return writeGoBinaryZip(dir, spec, p, streams[p.Type+"/"+p.Version][(i%len(spec.Platforms))%spec.Distinct])
	})
}

// executableName is the name of the provider binary in a release's zip,
// as HashiCorp names it.
func executableName(typ, version, platform string) string {
	name := "terraform-provider-" + typ + "_v" + version + "_x5"
	if strings.HasPrefix(platform, "windows_") {
		name += ".exe"
	}
	return name
}

// writeGoBinaryZip writes one platform's zip: the small text files, then
// the executable from its raw stream.
func writeGoBinaryZip(dir string, spec Spec, p *Package, exe rawStream) error {
	return writePackageFile(filepath.Join(dir, p.File), p, func(w io.Writer) error {
		return writeGoBinaryEntries(w, spec, p, exe)
	})
}

// writeGoBinaryEntries writes the zip of writeGoBinaryZip into w.
func writeGoBinaryEntries(w io.Writer, spec Spec, p *Package, exe rawStream) error {
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(w, gobinaryLevel)
	})
	for _, t := range textFiles(spec, p) {
		hdr := &zip.FileHeader{Name: t.name, Method: zip.Deflate, Modified: modified}
		hdr.SetMode(0o644)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := w.Write(t.data); err != nil {
			return err
		}
		p.Unpacked += int64(len(t.data))
	}

	hdr := &zip.FileHeader{
		Name:               executableName(p.Type, p.Version, p.Platform),
		Method:             zip.Deflate,
		Modified:           modified,
		CRC32:              exe.crc,
		CompressedSize64:   uint64(exe.comp),
		UncompressedSize64: uint64(exe.size),
	}
	// CreateRaw, unlike CreateHeader, does not turn Modified into the
	// MS-DOS date and time the entry carries: they are set here.
	hdr.ModifiedDate = uint16((modified.Year()-1980)<<9 | int(modified.Month())<<5 | modified.Day()) //nolint:staticcheck // see above
	hdr.ModifiedTime = uint16(modified.Hour()<<11 | modified.Minute()<<5 | modified.Second()/2)      //nolint:staticcheck // see above
	hdr.SetMode(0o755)
	w, err := zw.CreateRaw(hdr)
	if err != nil {
		return err
	}
	src, err := os.Open(exe.path)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, src)
	_ = src.Close() // read only
	if err != nil {
		return err
	}
	p.Unpacked += exe.size
	return zw.Close()
}

type textFile struct {
	name string
	data []byte
}

// textFiles are the small files of a release's zip (HashiCorp ships a
// CHANGELOG, the LICENSE and a README next to the binary); they name the
// platform, so every platform's zip differs.
func textFiles(spec Spec, p *Package) []textFile {
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%s/%s/text", spec.Seed, p.Type, p.Version))
	rng := rand.New(rand.NewChaCha8(sum))
	prose := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			for range 8 + rng.IntN(10) {
				b.WriteString(proseWords[rng.IntN(len(proseWords))])
				b.WriteByte(' ')
			}
			b.WriteString(".\n")
		}
		return b.Bytes()
	}
	head := fmt.Sprintf("terraform-provider-%s %s (%s)\n\n", p.Type, p.Version, p.Platform)
	return []textFile{
		{"CHANGELOG.md", append([]byte("## "+head), prose(96<<10)...)},
		{"LICENSE", append([]byte(head), prose(16<<10)...)},
		{"README.md", append([]byte("# "+head), prose(2<<10)...)},
	}
}

var proseWords = strings.Fields(`the provider resource data source argument attribute
	block configuration version release fix bug enhancement feature new support
	for with when and or not a an of to in is are be was were by on this that
	it from as at which may must should can will license copyright terms use
	distribution modification notice warranty liability contributor source
	code form work file software include including without limitation`)

// compressExecutable deflates about target bytes' worth of executable-like
// content, seeded by seed, into the raw stream file path, on every core.
func compressExecutable(path, seed string, target int64) (rawStream, error) {
	s := rawStream{path: path}
	f, err := os.Create(path)
	if err != nil {
		return s, err
	}
	defer func() { _ = f.Close() }() // on errors; closed and checked below otherwise

	type segment struct{ raw, comp []byte }
	workers := runtime.GOMAXPROCS(0)
	stop := make(chan struct{})
	ordered := make(chan chan segment, workers)
	type job struct {
		i   int
		out chan segment
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				raw := newBinGen(seed, j.i).segment(segmentSize)
				var comp bytes.Buffer
				fw, _ := flate.NewWriter(&comp, gobinaryLevel) // the level is valid
				_, _ = fw.Write(raw)                           // a bytes.Buffer does not fail
				_ = fw.Flush()                                 // a sync flush: byte-aligned, not final
				j.out <- segment{raw, comp.Bytes()}
			}
		})
	}
	go func() {
		defer close(jobs)
		defer close(ordered)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			out := make(chan segment, 1)
			select {
			case ordered <- out:
			case <-stop:
				return
			}
			select {
			case jobs <- job{i, out}:
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		close(stop)
		for range ordered { // drain, so that the producer ends
		}
		wg.Wait()
	}()

	table := crc32.MakeTable(crc32.IEEE)
	for out := range ordered {
		seg := <-out
		if _, err := f.Write(seg.comp); err != nil {
			return s, err
		}
		s.crc = crc32.Update(s.crc, table, seg.raw)
		s.size += int64(len(seg.raw))
		s.comp += int64(len(seg.comp))
		if s.comp >= target {
			break
		}
	}
	// An empty final block (fixed Huffman codes): the end of the stream.
	if _, err := f.Write([]byte{0x03, 0x00}); err != nil {
		return s, err
	}
	s.comp += 2
	return s, f.Close()
}

// binGen makes executable-like content that deflates about 4.5 to 1, in
// runs of 32 KiB blocks of one kind: machine code (per-executable opcodes
// with a skewed frequency, displacements and addresses, and functions
// that are mostly near-copies of recent ones, as generated code is),
// string tables (identifiers built from common segments, like package
// paths and symbol names), line tables (increasing program counters with
// small fields) and now and then incompressible bytes (embedded compressed
// data). Decoding it takes the mix of literals and matches real provider
// binaries take.
type binGen struct {
	rng   *rand.Rand
	src   *rand.ChaCha8
	ops   [][]byte
	words [][]byte
	funcs [][]byte // recent functions (ringSize)
	pc    uint64
	kind  int // of the current run, 0-99
	left  int // blocks left in the current run
}

// The shares of each kind of run, in percent: the rest are line tables.
const (
	randomShare  = 2
	codeShare    = 60
	stringsShare = 25
	copyPercent  = 97 // of the functions in code runs
	ringSize     = 64 // recent functions a copy is made from
	genBlockSize = 32 << 10
)

// newBinGen returns the generator of segment i of the executable seed:
// the vocabulary is the executable's, the stream the segment's own.
func newBinGen(seed string, i int) *binGen {
	vocab := sha256.Sum256([]byte(seed))
	vr := rand.New(rand.NewChaCha8(vocab))
	g := &binGen{}
	for range 512 {
		op := make([]byte, 1+vr.IntN(5))
		for j := range op {
			op[j] = byte(vr.IntN(256))
		}
		g.ops = append(g.ops, op)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./"
	segs := make([][]byte, 96)
	for j := range segs {
		segs[j] = make([]byte, 2+vr.IntN(9))
		for k := range segs[j] {
			segs[j][k] = alphabet[vr.IntN(len(alphabet))]
		}
	}
	for range 4096 {
		var w []byte
		for k := range 1 + vr.IntN(3) {
			if k > 0 {
				w = append(w, "/._"[vr.IntN(3)])
			}
			w = append(w, segs[min(vr.IntN(len(segs)), vr.IntN(len(segs)))]...)
		}
		g.words = append(g.words, w)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/segment/%d", seed, i))
	g.src = rand.NewChaCha8(sum)
	g.rng = rand.New(g.src)
	g.pc = 0x400000 + uint64(i)<<22
	// The ring starts full, so that the content is alike from its first
	// byte, whatever the segments' size.
	for range ringSize {
		g.funcs = append(g.funcs, g.function())
	}
	return g
}

// segment returns n bytes of content.
func (g *binGen) segment(n int) []byte {
	out := make([]byte, 0, n+genBlockSize)
	for len(out) < n {
		out = g.block(out)
	}
	return out[:n]
}

// block appends the next 32 KiB block to b.
func (g *binGen) block(b []byte) []byte {
	if g.left == 0 {
		g.kind, g.left = g.rng.IntN(100), 2+g.rng.IntN(30)
	}
	g.left--
	end := len(b) + genBlockSize
	switch k := g.kind; {
	case k < randomShare:
		b = b[:end]
		_, _ = g.src.Read(b[end-genBlockSize:]) // never fails
	case k < randomShare+codeShare:
		for len(b) < end {
			b = g.code(b)
		}
	case k < randomShare+codeShare+stringsShare:
		for len(b) < end {
			r := g.src.Uint64()
			for range 4 {
				b = append(b, g.words[min(r&0xfff, (r>>32)&0xfff)]...)
				switch (r >> 12) & 3 {
				case 0:
					b = append(b, 0)
				case 1:
					b = append(b, '.')
				}
				r >>= 14
			}
		}
	default:
		for len(b) < end {
			g.pc += uint64(1 + g.rng.IntN(8))
			b = binary.LittleEndian.AppendUint64(b, g.pc)
			b = binary.LittleEndian.AppendUint32(b, uint32(g.rng.IntN(12)))
			b = binary.LittleEndian.AppendUint32(b, uint32(g.rng.IntN(4)))
		}
	}
	return b[:end]
}

// code appends one function: mostly a near-copy of a recent one.
func (g *binGen) code(b []byte) []byte {
	if g.rng.IntN(100) < copyPercent {
		start := len(b)
		b = append(b, g.funcs[g.rng.IntN(len(g.funcs))]...)
		for range 1 + g.rng.IntN(4) {
			b[start+g.rng.IntN(len(b)-start)] = byte(g.rng.IntN(256))
		}
		return b
	}
	f := g.function()
	g.funcs[g.rng.IntN(len(g.funcs))] = f
	return append(b, f...)
}

// function returns a new function.
func (g *binGen) function() []byte {
	var b []byte
	for range 8 + g.rng.IntN(120) {
		r := g.src.Uint64()
		n := uint64(len(g.ops))
		b = append(b, g.ops[min(r%n, (r>>20)%n, (r>>40)%n)]...)
		switch r := g.rng.IntN(10); {
		case r < 3: // a small relative displacement
			b = binary.LittleEndian.AppendUint32(b, uint32(int32(g.rng.IntN(4096)-2048)))
		case r < 4: // an absolute address
			b = binary.LittleEndian.AppendUint32(b, uint32(0x400000+g.rng.IntN(1<<24)))
		}
	}
	return b
}

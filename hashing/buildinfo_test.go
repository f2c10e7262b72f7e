package hashing

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sync"
	"testing"
)

// scanInChunks writes data to a new scanner in pieces of size chunk.
func scanInChunks(data []byte, chunk int) *debug.BuildInfo {
	var s BuildInfoScanner
	for len(data) > 0 {
		n := min(chunk, len(data))
		_, _ = s.Write(data[:n])
		data = data[n:]
	}
	return s.Info()
}

// scanWhole is the scan without streaming: every aligned magic of data in
// turn, the first that parses wins, as many tries as the scanner allows.
func scanWhole(data []byte) *debug.BuildInfo {
	tries := 0
	for off := 0; off+len(buildInfoMagic) <= len(data); off += buildInfoAlign {
		if !bytes.HasPrefix(data[off:], []byte(buildInfoMagic)) {
			continue
		}
		switch info, status := parseBuildInfo(data[off:]); status {
		case buildInfoFound:
			return info
		case buildInfoMore:
			return nil
		}
		if tries++; tries >= maxBuildInfoTries {
			return nil
		}
	}
	return nil
}

func infoString(info *debug.BuildInfo) string {
	if info == nil {
		return "<none>"
	}
	return info.String()
}

// programsDir holds the programs the tests build, once for every test
// of the package; TestMain removes it.
var programsDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tfmirror-buildinfo-") //nolint:usetesting // shared by the package's tests
	if err != nil {
		panic(err)
	}
	programsDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var testPrograms struct {
	once  sync.Once
	files map[string]string
	err   error
}

// goPrograms builds small Go programs for the three platforms providers
// ship most, stripped and not, one of them holding the magic in its own
// data (it reads build information itself), and returns their paths by
// name.
func goPrograms(t *testing.T) map[string]string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds Go programs")
	}
	testPrograms.once.Do(func() {
		testPrograms.files, testPrograms.err = buildPrograms(programsDir)
	})
	if testPrograms.err != nil {
		t.Fatal(testPrograms.err)
	}
	return testPrograms.files
}

func buildPrograms(dir string) (map[string]string, error) {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		"go.mod": "module example.test/terraform-provider-probe\n\ngo 1.22\n",
		"main.go": `package main

import (
	"debug/buildinfo"
	"fmt"
	"os"
)

var magic = []byte("\xff Go buildinf:")

func main() {
	info, err := buildinfo.ReadFile(os.Args[0])
	fmt.Println(info, err, len(magic))
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	out := map[string]string{}
	for _, target := range [][2]string{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"linux", "386"}} {
		for _, stripped := range []bool{false, true} {
			name := target[0] + "_" + target[1]
			args := []string{"build", "-trimpath", "-o", filepath.Join(dir, name)}
			if stripped {
				name += "_stripped"
				args = []string{"build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, name)}
			}
			args = append(args, ".")
			cmd := exec.Command("go", args...)
			cmd.Dir = src
			cmd.Env = append(os.Environ(), "GOOS="+target[0], "GOARCH="+target[1], "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
			if msg, err := cmd.CombinedOutput(); err != nil {
				return nil, &buildError{name, err, msg}
			}
			out[name] = filepath.Join(dir, name)
		}
	}
	return out, nil
}

type buildError struct {
	name string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return "build " + e.name + ": " + e.err.Error() + "\n" + string(e.out)
}

// TestBuildInfoScannerMatchesDebugBuildinfo holds the streamed scan to
// debug/buildinfo (what `go version -m` prints) on real programs, written
// in pieces of every awkward size.
func TestBuildInfoScannerMatchesDebugBuildinfo(t *testing.T) {
	for name, path := range goPrograms(t) {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want, err := buildinfo.Read(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("debug/buildinfo: %v", err)
			}
			if want.Main.Path != "example.test/terraform-provider-probe" {
				t.Fatalf("debug/buildinfo main module = %q", want.Main.Path)
			}
			for _, chunk := range []int{1, 7, 13, 14, 15, 16, 17, 4093, 32 << 10, len(data)} {
				if chunk == 1 && len(data) > 8<<20 {
					continue
				}
				if got := scanInChunks(data, chunk); infoString(got) != want.String() {
					t.Fatalf("in pieces of %d bytes, scanned\n%s\nwant\n%s", chunk, infoString(got), want.String())
				}
			}
		})
	}
}

// TestBuildInfoScannerNotGo finds nothing in files that are not Go
// programs, or hold a magic that does not start build information.
func TestBuildInfoScannerNotGo(t *testing.T) {
	header := func(flags byte, rest ...byte) []byte {
		b := make([]byte, 64)
		copy(b[16:], buildInfoMagic)
		b[16+14], b[16+15] = 8, flags
		return append(b[:48], rest...)
	}
	cases := map[string][]byte{
		"empty":           nil,
		"text":            []byte("#!/bin/sh\necho not a Go program\n"),
		"unaligned magic": append([]byte("x"), header(buildInfoInline, 4, 'g', 'o', '1', '2', 0)[16:]...),
		"before go1.18":   header(0, make([]byte, 16)...),
		"cut short":       header(buildInfoInline, 30, 'g', 'o'),
		"version too long": header(buildInfoInline,
			binary.AppendUvarint(nil, maxBuildVersion+1)...),
		"empty version": header(buildInfoInline, 0, 0),
	}
	if sh, err := os.ReadFile("/bin/sh"); err == nil {
		cases["/bin/sh"] = sh
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			for _, chunk := range []int{1, 5, 64, max(1, len(data))} {
				if got := scanInChunks(data, chunk); got != nil {
					t.Fatalf("in pieces of %d found build information %s", chunk, got)
				}
			}
		})
	}
}

// TestBuildInfoScannerSkipsFalseStarts reads past magics that start no
// build information to the one that does, and gives up after too many.
func TestBuildInfoScannerSkipsFalseStarts(t *testing.T) {
	good := func() []byte {
		b := append([]byte{}, buildInfoMagic...)
		b = append(b, 8, buildInfoInline)
		b = append(b, make([]byte, 16)...)
		b = binary.AppendUvarint(b, 8)
		b = append(b, "go1.26.0"...)
		return binary.AppendUvarint(b, 0)
	}()
	bad := append(append([]byte{}, buildInfoMagic...), 8, 0) // pointer form
	pad := func(b []byte) []byte { return append(b, make([]byte, 32-len(b)%32)...) }
	var data []byte
	for range 3 {
		data = append(data, pad(bad)...)
	}
	data = append(data, pad(good)...)
	if got := scanInChunks(data, 3); got == nil || got.GoVersion != "go1.26.0" {
		t.Fatalf("after 3 false starts: got %s", infoString(got))
	}
	data = nil
	for range maxBuildInfoTries {
		data = append(data, pad(bad)...)
	}
	data = append(data, pad(good)...)
	if got := scanInChunks(data, 11); got != nil {
		t.Fatalf("after %d false starts: got %s, want none", maxBuildInfoTries, got)
	}
}

// FuzzBuildInfoScanner holds the streamed scan to the same scan over the
// whole file, whatever the bytes and however they are cut.
func FuzzBuildInfoScanner(f *testing.F) {
	blob := append(append([]byte{}, buildInfoMagic...), 8, buildInfoInline)
	blob = append(blob, make([]byte, 16)...)
	blob = binary.AppendUvarint(blob, 6)
	blob = append(blob, "go1.22"...)
	mod := "0123456789abcdef" + "path\texample.test/p\nmod\texample.test/p\t(devel)\t\n" + "0123456789abcdef"
	blob = binary.AppendUvarint(blob, uint64(len(mod)))
	blob = append(blob, mod...)
	f.Add(append(make([]byte, 32), blob...), uint8(5))
	f.Add(append(make([]byte, 30), blob...), uint8(1))
	f.Add(append(append(make([]byte, 16), blob[:20]...), blob...), uint8(13))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		want := scanWhole(data)
		got := scanInChunks(data, int(chunk)+1)
		if infoString(got) != infoString(want) {
			t.Fatalf("in pieces of %d: streamed %s, whole %s", int(chunk)+1, infoString(got), infoString(want))
		}
	})
}

// TestArchiveProgram reads a provider archive's build information in the
// hashing pass, streamed or from the file, and only from its executable.
func TestArchiveProgram(t *testing.T) {
	progs := goPrograms(t)
	exe, err := os.ReadFile(progs["windows_amd64_stripped"])
	if err != nil {
		t.Fatal(err)
	}
	want, err := buildinfo.Read(bytes.NewReader(exe))
	if err != nil {
		t.Fatal(err)
	}
	archive := func(entries ...[2][]byte) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, e := range entries {
			w, err := zw.Create(string(e[0]))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write(e[1])
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	exeName := "terraform-provider-probe_v1.0.0_x5.exe"
	cases := []struct {
		name     string
		zip      []byte
		wantExe  string
		wantInfo string
	}{
		{"go program", archive([2][]byte{[]byte("LICENSE"), exe}, [2][]byte{[]byte(exeName), exe}), exeName, want.String()},
		{"not go", archive([2][]byte{[]byte("terraform-provider-sh"), []byte("#!/bin/sh\n")}), "terraform-provider-sh", "<none>"},
		{"no executable", archive([2][]byte{[]byte("README.md"), exe}), "", "<none>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, tc.zip)
			sum := sha256.Sum256(tc.zip)
			streamed := stream(tc.zip, 4093, DefaultZipLimits, StreamOptions{})
			for how, res := range map[string]*StreamResult{"from the file": nil, "streamed": streamed} {
				sums, err := HashArchiveStreamed(path, sum, DefaultZipLimits, res)
				if err != nil {
					t.Fatal(err)
				}
				if res != nil && !res.Summarized {
					t.Fatalf("stream not used: %s", res.Mismatch)
				}
				if sums.Program.Executable != tc.wantExe || infoString(sums.Program.Info) != tc.wantInfo {
					t.Fatalf("%s: program %q with\n%s\nwant %q with\n%s", how, sums.Program.Executable,
						infoString(sums.Program.Info), tc.wantExe, tc.wantInfo)
				}
			}
		})
	}
}

// alignedIndexNaive is alignedIndex as its doc says it, one offset at a
// time.
func alignedIndexNaive(p []byte, base int64) int {
	for i := 0; i+len(buildInfoMagic) <= len(p); i++ {
		if (base+int64(i))%buildInfoAlign == 0 && string(p[i:i+len(buildInfoMagic)]) == buildInfoMagic {
			return i
		}
	}
	return -1
}

// TestAlignedIndex holds the word-at-a-time search to the one that looks
// at every offset: magics at aligned and unaligned offsets, decoys whose
// first eight bytes (or all but the last byte) match, magics cut by the
// end of the buffer, at every base.
func TestAlignedIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	decoys := []string{buildInfoMagic, buildInfoMagic[:8] + "xxxxxx", buildInfoMagic[:13] + "!", buildInfoMagic[:8]}
	for round := range 3000 {
		p := make([]byte, rng.IntN(400))
		for i := range p {
			p[i] = byte(rng.IntN(4)) * 0x55 // 0x00, 0x55, 0xaa, 0xff
		}
		for range rng.IntN(4) {
			d := decoys[rng.IntN(len(decoys))]
			if len(p) > 0 {
				copy(p[rng.IntN(len(p)):], d)
			}
		}
		base := int64(rng.IntN(64))
		if got, want := alignedIndex(p, base), alignedIndexNaive(p, base); got != want {
			t.Fatalf("round %d: alignedIndex(%x, %d) = %d, want %d", round, p, base, got, want)
		}
	}
}

func BenchmarkAlignedIndex(b *testing.B) {
	p := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if alignedIndex(p, 0) >= 0 {
			b.Fatal("found a magic in random bytes")
		}
	}
}

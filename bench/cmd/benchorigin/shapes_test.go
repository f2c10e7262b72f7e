package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/cli"
	"github.com/tfmirror/tfmirror/internal/testutil/pagetest"
)

func TestGoBinaryCorpus(t *testing.T) {
	old := segmentSize
	segmentSize = 256 << 10 // several segments per executable
	t.Cleanup(func() { segmentSize = old })
	spec := Spec{
		Generator: generatorVersion, Shape: ShapeGoBinary, Namespace: "bench", Providers: 1, Versions: 1,
		Platforms: []string{"linux_amd64", "darwin_arm64", "windows_amd64"}, Sizes: "2M-3M", Seed: 3, Distinct: 2,
	}
	a, err := loadOrGenerate(t.TempDir(), spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadOrGenerate(t.TempDir(), spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Packages) != 3 {
		t.Fatalf("%d packages, want 3", len(a.Packages))
	}
	digests := map[string]bool{}
	exeCRC := map[string]uint32{}
	for i, p := range a.Packages {
		if p.SHA256 != b.Packages[i].SHA256 {
			t.Errorf("%s differs between two generations", p.File)
		}
		digests[p.SHA256] = true
		if p.Size < 2e6 || p.Size > 3.5e6 {
			t.Errorf("%s: %d bytes, want about 2-3 MB", p.File, p.Size)
		}
		// A few MB hold few runs of each kind: the ratio varies more
		// than over the hundreds of MB of a real corpus.
		if ratio := float64(p.Unpacked) / float64(p.Size); ratio < 3.5 || ratio > 6 {
			t.Errorf("%s: unpacks to %.2f times its size, want about 4.5", p.File, ratio)
		}
		path := filepath.Join(a.Dir, p.File)
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var unpacked int64
		for _, f := range zr.File {
			names = append(names, f.Name)
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, rc) // checks the CRC and the size
			_ = rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", p.File, f.Name, err)
			}
			unpacked += n
			if strings.HasPrefix(f.Name, "terraform-provider-") {
				exeCRC[p.Platform] = f.CRC32
				if f.Mode().Perm() != 0o755 || f.Modified.Year() != 2025 {
					t.Errorf("%s: %s: mode %v, modified %v", p.File, f.Name, f.Mode(), f.Modified)
				}
			}
		}
		_ = zr.Close()
		exe := "terraform-provider-p1_v1.0.0_x5"
		if p.Platform == "windows_amd64" {
			exe += ".exe"
		}
		if want := []string{"CHANGELOG.md", "LICENSE", "README.md", exe}; !slices.Equal(names, want) {
			t.Errorf("%s: entries %q, want %q", p.File, names, want)
		}
		if unpacked != p.Unpacked {
			t.Errorf("%s: unpacks to %d bytes, corpus.json says %d", p.File, unpacked, p.Unpacked)
		}
		if _, err := dirhash.HashZip(path, dirhash.Hash1); err != nil {
			t.Errorf("%s: h1: %v", p.File, err)
		}
	}
	if len(digests) != 3 {
		t.Errorf("platforms share archives: %d digests", len(digests))
	}
	// Two executables: platforms 0 and 2 share the first.
	if exeCRC["linux_amd64"] != exeCRC["windows_amd64"] || exeCRC["linux_amd64"] == exeCRC["darwin_arm64"] {
		t.Errorf("executables by platform: %v", exeCRC)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, ".raw")); err == nil {
		t.Errorf("the raw streams were left in the corpus")
	}
}

// TestFleetTreeIsWhatABuildWrites builds a small fleet from its origin
// with tfmirror itself, into an empty directory, and compares the result
// with the tree the generator wrote, file by file; then builds into a copy
// of the generated tree: a no-op, one request per provider.
func TestFleetTreeIsWhatABuildWrites(t *testing.T) {
	spec := Spec{
		Generator: generatorVersion, Shape: ShapeFleet, Namespace: "bench", Providers: 3, Versions: 2,
		Platforms: []string{"linux_amd64", "darwin_arm64", "windows_amd64"}, Seed: 5,
	}
	c, err := loadOrGenerate(t.TempDir(), spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Packages) != 18 || c.Tree == "" {
		t.Fatalf("%d packages, tree %q", len(c.Packages), c.Tree)
	}
	sig, err := loadSigner(filepath.Join(c.Dir, c.Key))
	if err != nil {
		t.Fatal(err)
	}
	o, err := newOrigin(c, sig, 0)
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, caPEM, err := newTLS()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(o)
	srv.TLS = tlsConfig
	srv.StartTLS()
	defer srv.Close()
	state := t.TempDir()
	if err := writeState(state, c, srv.URL, caPEM, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	build := func(out string) string {
		t.Helper()
		var stdout, stderr strings.Builder
		code := cli.Main(t.Context(), cli.Env{
			Args:    []string{"build", "--config", filepath.Join(state, "tfmirror.hcl"), "--out", out},
			Stdout:  &stdout,
			Stderr:  &stderr,
			Environ: []string{"SSL_CERT_FILE=" + filepath.Join(state, "ca.pem"), "HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()},
		})
		if code != 0 {
			t.Fatalf("tfmirror build: exit %d\n%s%s", code, stdout.String(), stderr.String())
		}
		return stdout.String()
	}

	built := t.TempDir()
	build(built)
	tree := filepath.Join(c.Dir, c.Tree)
	want, got := treeFiles(t, tree), treeFiles(t, built)
	if !slices.Equal(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got))) {
		t.Fatalf("files differ:\ngenerated %v\nbuilt     %v", slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got)))
	}
	for name, sum := range want {
		if got[name] != sum {
			a, _ := os.ReadFile(filepath.Join(tree, name))
			b, _ := os.ReadFile(filepath.Join(built, name))
			t.Errorf("%s differs:\ngenerated:\n%s\nbuilt:\n%s", name, a, b)
		}
	}

	before := o.stats()
	copied := t.TempDir()
	if err := os.CopyFS(copied, os.DirFS(tree)); err != nil {
		t.Fatal(err)
	}
	if out := build(copied); !strings.Contains(out, "0 mirrored, 18 already present") {
		t.Fatalf("a build into the generated tree is not a no-op:\n%s", out)
	}
	after := o.stats()
	if n := after.Requests - before.Requests; n != 3 || after.VersionsRequests-before.VersionsRequests != 3 {
		t.Errorf("the no-op made %d requests (%+v), want one version list per provider", n, after)
	}
}

// treeFiles maps every file of a mirror tree but .tfmirror/ and the
// change records to its digest; the page's without its section of recent
// changes.
func treeFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (rel == ".tfmirror" || rel == "changes") {
			return filepath.SkipDir // the build's change record differs by its time
		}
		if rel == "changes.atom" {
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == "index.html" {
			data = []byte(pagetest.WithoutChanges(string(data)))
		}
		sum := sha256.Sum256(data)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

package cli

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
	"github.com/tfmirror/tfmirror/layout"
)

const (
	hardFooDoc     = fooDir + "1.0.0.json"
	hardFooArchive = fooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip"
)

// hardBundle builds a mirror, packs it and returns the bundle's entries.
func hardBundle(t *testing.T, o origin) (site, work string, entries []tarEntry) {
	t.Helper()
	site = builtSite(t, o)
	work = t.TempDir()
	file := filepath.Join(work, "good.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", file)
	return site, work, targz.Read(t, file)
}

// hardRelist rewrites the manifest to list the regular entries as they
// are (plus extra), in the canonical form.
func hardRelist(t *testing.T, es []tarEntry, extra ...bundle.File) []tarEntry {
	t.Helper()
	m := bundle.Manifest{Format: bundle.FormatVersion, CreatedBy: "tfmirror", Files: extra}
	for _, e := range es[1:] {
		if e.Header.Typeflag == tar.TypeReg {
			m.Files = append(m.Files, bundle.File{Path: e.Header.Name, SHA256: sha256Hex(e.Data), Size: int64(len(e.Data))})
		}
	}
	slices.SortFunc(m.Files, func(a, b bundle.File) int { return strings.Compare(a.Path, b.Path) })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	es[0].Data = append(data, '\n')
	return es
}

func hardFind(t *testing.T, es []tarEntry, name string) int {
	t.Helper()
	for i, e := range es {
		if e.Header.Name == name {
			return i
		}
	}
	t.Fatalf("no entry %s", name)
	return -1
}

// hardRefused imports the bundle into an existing mirror and into a new
// directory: exit 3, want in the output, at most maxLines problem lines,
// and each destination exactly as it was.
func hardRefused(t *testing.T, o origin, work string, data []byte, want string, maxLines int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "bad.tar.gz")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{existingMirror(t, o), filepath.Join(t.TempDir(), "new")} {
		before := snapshot(t, dest)
		code, stdout, stderr := o.run(t, work, "bundle", "import", file, "--out", dest)
		if code != ExitVerification || !strings.Contains(stdout+stderr, want) || !strings.Contains(stderr, "nothing was written") {
			t.Errorf("exit %d, want %d and %q\n%s%s", code, ExitVerification, want, stdout, stderr)
		}
		if n := strings.Count(stdout, "problem  "); n > maxLines {
			t.Errorf("%d problem lines, want at most %d", n, maxLines)
		}
		diffSnapshots(t, before, snapshot(t, dest))
	}
}

func TestHardeningBundleCreateRefusesLinkedLockFile(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	work := t.TempDir()
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(work, "live", "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(work, "live", "app", ".terraform.lock.hcl")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	code, stdout, stderr := o.run(t, work, "bundle", "create", site, "--out", "b.tar.gz", "--lock-files", "live/app")
	if code == ExitOK || !strings.Contains(stderr, filepath.Join("live", "app", ".terraform.lock.hcl")) || !strings.Contains(stderr, "symbolic link") {
		t.Errorf("exit %d, want a failure naming the linked lock file\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "b.tar.gz")); !os.IsNotExist(err) {
		t.Errorf("a bundle was written: %v", err)
	}
}

// TestHardeningVerifyForeignArchiveURL: verify reports a version document
// whose relative url is not its own archive, and only warns about an
// absolute one.
func TestHardeningVerifyForeignArchiveURL(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	planted := filepath.Join(site, "registry.opentofu.org", "hashicorp", "bar", "planted.zip")
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(site, filepath.FromSlash(hardFooArchive)), planted); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(site, filepath.FromSlash(hardFooDoc))
	hardSetURL(t, doc, "../bar/planted.zip")
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
	if code != ExitVerification || !strings.Contains(stdout, hardFooDoc) || !strings.Contains(stdout, `url "../bar/planted.zip" is not this release's own archive`) {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	hardSetURL(t, doc, "https://releases.example.com/foo.zip")
	code, stdout, stderr = o.run(t, t.TempDir(), "verify", site)
	if code != ExitOK || !strings.Contains(stdout, "not in this mirror; not checked") {
		t.Errorf("verify with an absolute url: exit %d\n%s%s", code, stdout, stderr)
	}
}

func hardSetURL(t *testing.T, file, url string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out, err := hardWithURL(data, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hardWithURL sets the linux_amd64 url of a version document.
func hardWithURL(data []byte, url string) ([]byte, error) {
	doc, err := layout.DecodeVersion(data)
	if err != nil {
		return nil, err
	}
	a := doc.Archives["linux_amd64"]
	a.URL = url
	doc.Archives["linux_amd64"] = a
	return layout.Encode(doc)
}

// TestHardeningBundleImportRefusesForeignArchiveURL: a bundle whose
// version document points at a planted copy of its archive (outside the
// release, or in another provider's directory) exits 3, nothing written.
func TestHardeningBundleImportRefusesForeignArchiveURL(t *testing.T) {
	o := newOrigin(t)
	_, work, good := hardBundle(t, o)
	for _, url := range []string{"../../../.tfmirror/store/planted.zip", "../bar/terraform-provider-bar_1.0.0_linux_amd64.zip"} {
		t.Run(url, func(t *testing.T) {
			es := slices.Clone(good)
			i := hardFind(t, es, "mirror/"+hardFooArchive)
			es[i].Header.Name = "mirror/" + path.Join(fooDir, url)
			d := hardFind(t, es, "mirror/"+hardFooDoc)
			var err error
			if es[d].Data, err = hardWithURL(es[d].Data, url); err != nil {
				t.Fatal(err)
			}
			hardRefused(t, o, work, targz.Pack(t, hardRelist(t, es), nil),
				"problem  mirror/"+hardFooDoc+": linux_amd64: url "+fmt.Sprintf("%q", url)+" is not this release's own archive", 1)
		})
	}
}

func TestHardeningBundleImportRefusesAmplification(t *testing.T) {
	o := newOrigin(t)
	_, work, good := hardBundle(t, o)

	t.Run("padded index.json", func(t *testing.T) {
		es := slices.Clone(good)
		i := hardFind(t, es, "mirror/"+fooDir+"index.json")
		es[i].Data = append(bytes.Clone(es[i].Data), bytes.Repeat([]byte("\n"), 1<<20)...)
		hardRefused(t, o, work, targz.Pack(t, hardRelist(t, es), nil), "index.json: not in the canonical form", 1)
	})
	t.Run("too many entries", func(t *testing.T) {
		m := bundle.Manifest{Format: bundle.FormatVersion, CreatedBy: "tfmirror", Files: make([]bundle.File, bundle.DefaultLimits.MaxEntries+1)}
		for i := range m.Files {
			m.Files[i] = bundle.File{Path: fmt.Sprintf("mirror/f/%07d.zip", i), SHA256: strings.Repeat("ab", 32), Size: 1}
		}
		data, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		hardRefused(t, o, work, targz.Pack(t, []tarEntry{targz.Regular("manifest.json", string(data)+"\n")}, nil),
			fmt.Sprintf("more than the limit of %d files", bundle.DefaultLimits.MaxEntries), 1)
	})
	t.Run("many problems", func(t *testing.T) {
		var missing []bundle.File
		for i := range 30 {
			missing = append(missing, bundle.File{Path: fmt.Sprintf("mirror/x/%02d.zip", i), SHA256: strings.Repeat("ab", 32), Size: 1})
		}
		hardRefused(t, o, work, targz.Pack(t, hardRelist(t, slices.Clone(good), missing...), nil), "and 10 more problems", 21)
	})
	t.Run("gzip bomb", func(t *testing.T) {
		hardRefused(t, o, work, hardBomb(t, slices.Clone(good), 256<<20), "compression bomb", 1)
	})
}

// hardBomb adds a listed file of size zeros to the bundle, compressed
// to a few hundred bytes per MiB (gzip members of zeros, repeated).
func hardBomb(t *testing.T, es []tarEntry, size int64) []byte {
	t.Helper()
	name := "mirror/" + fooDir + "terraform-provider-foo_1.0.0_bomb.zip"
	es = hardRelist(t, es, bundle.File{Path: name, SHA256: strings.Repeat("00", 32), Size: size})
	return targz.Bomb(t, es, name, size)
}

// TestHardeningBundleImportHoldsModulesToModuleLimits: a bundle carrying
// a module zip bomb that unpacks to 1.25 GiB, past the module limit a
// build applies (1 GiB) but within the provider limit (4 GiB), is
// refused: exit 3 naming the module, nothing written.
func TestHardeningBundleImportHoldsModulesToModuleLimits(t *testing.T) {
	o := newOrigin(t)
	o.reg.AddFile("zip.zip", zipbuild.Bytes(t, zipbuild.File("main.tf", "# zip\n")))
	o.reg.AddModule("acme/zip/aws", "1.0.0", o.reg.URL+"/files/zip.zip", false)
	dir := t.TempDir()
	writeManifest(t, dir, moduleManifest(o, `module "acme/zip/aws" { versions = "1.0.0" }`+"\n"))
	mustRun(t, o, dir, "build")
	work := t.TempDir()
	good := filepath.Join(work, "good.tar.gz")
	mustRun(t, o, work, "bundle", "create", filepath.Join(dir, "site"), "--out", good)

	const size = 1280 << 20
	if size <= hashing.DefaultModuleLimits.MaxBytes || size >= hashing.DefaultZipLimits.MaxUnpackedBytes {
		t.Fatalf("the bomb must exceed the module limit and not the provider limit")
	}
	bomb := zipbuild.Bomb(t, "main.tf", size)
	const moduleDir = "mirror/modules/registry.opentofu.org/acme/zip/aws/"
	es := targz.Read(t, good)
	es[hardFind(t, es, moduleDir+"1.0.0.zip")].Data = bomb
	r := hardFind(t, es, moduleDir+"1.0.0.json")
	rec, err := layout.DecodeModuleRecord(es[r].Data)
	if err != nil {
		t.Fatal(err)
	}
	rec.SHA256, rec.Size = sha256Hex(bomb), int64(len(bomb))
	if es[r].Data, err = layout.Encode(rec); err != nil {
		t.Fatal(err)
	}
	hardRefused(t, o, work, targz.Pack(t, hardRelist(t, es), nil),
		fmt.Sprintf("acme/zip/aws 1.0.0: archive unpacks to more than the limit of %d bytes", hashing.DefaultModuleLimits.MaxBytes), 1)
}

package bundle

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

const (
	hFooDir     = "registry.opentofu.org/hashicorp/foo/"
	hFooArchive = hFooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip"
	hFooDoc     = hFooDir + "1.0.0.json"
	hLock       = `provider "registry.opentofu.org/hashicorp/foo" {
  version = "1.0.0"
  hashes = [
    "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
  ]
}
`
	hPrivateKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
)

// hSite is a mirror of hashicorp/foo 1.0.0 for linux_amd64.
func hSite(t *testing.T) string {
	t.Helper()
	site := t.TempDir()
	publishRelease(t, site, newSigner(t), "foo", "1.0.0", "linux_amd64")
	return site
}

// hBundle packs hSite, with lock files, and returns its entries.
func hBundle(t *testing.T, lockFiles ...LockFile) []tarEntry {
	t.Helper()
	file := filepath.Join(t.TempDir(), "b.tgz")
	if _, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, hSite(t)), Out: file, LockFiles: lockFiles}); err != nil {
		t.Fatal(err)
	}
	return targz.Read(t, file)
}

// relist rewrites the manifest (es[0]) to list the regular entries as
// they are, so only the checks after the manifest's can catch a change.
func relist(t *testing.T, es []tarEntry, extra ...File) []tarEntry {
	t.Helper()
	m := Manifest{Format: FormatVersion, CreatedBy: createdBy, Files: extra}
	for _, e := range es[1:] {
		if e.Header.Typeflag == tar.TypeReg {
			sum := sha256.Sum256(e.Data)
			m.Files = append(m.Files, File{Path: e.Header.Name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(e.Data))})
		}
	}
	sortFiles(m.Files)
	data, err := encodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	es[0].Data = data
	return es
}

func hIndex(t *testing.T, es []tarEntry, name string) int {
	t.Helper()
	for i, e := range es {
		if e.Header.Name == name {
			return i
		}
	}
	t.Fatalf("no entry %s", name)
	return -1
}

// hWrite writes a bundle file and returns its path.
func hWrite(t *testing.T, data []byte) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "bad.tgz")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// hRefused imports file into a new destination and requires a refusal
// whose text holds want, with nothing left behind. It returns the error.
func hRefused(t *testing.T, file string, opts ImportOptions, want string) *RefusedError {
	t.Helper()
	opts.Bundle = file
	if opts.Out == "" {
		opts.Out = filepath.Join(t.TempDir(), "dest")
	}
	if opts.Into.Tree == nil {
		opts.Into = dirTarget(t, opts.Out)
	}
	before := files(t, opts.Out)
	_, err := Import(context.Background(), opts)
	var refusedErr *RefusedError
	if !errors.As(err, &refusedErr) || !strings.Contains(fmt.Sprint(err, refusedErr.Problems), want) {
		t.Fatalf("err = %v, want a refusal mentioning %q", err, want)
	}
	if after := files(t, opts.Out); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the destination changed: %v, was %v", keys(after), keys(before))
	}
	if _, err := os.Stat(filepath.Join(opts.Out, ".tfmirror")); before == nil && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused import left %s/.tfmirror: %v", opts.Out, err)
	}
	return refusedErr
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// --- 10. bundle create packs only what it means to ---

func TestHardeningCreateRefusesLinkedLockFile(t *testing.T) {
	site := hSite(t)
	secret := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(secret, []byte(hPrivateKey), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, LockFileName)
	if err := os.Symlink(secret, lock); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	out := filepath.Join(t.TempDir(), "b.tgz")
	_, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: out, LockFiles: []LockFile{{Name: "app", Path: lock}}})
	if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("err = %v, want a refusal naming %s as a symbolic link", err, lock)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a bundle was written: %v", err)
	}
}

func TestHardeningCreateRefusesWhatIsNoLockFile(t *testing.T) {
	site := hSite(t)
	lock := filepath.Join(t.TempDir(), LockFileName)
	if err := os.WriteFile(lock, []byte(hPrivateKey), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "b.tgz")
	_, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: out, LockFiles: []LockFile{{Path: lock}}})
	if err == nil || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "not a lock file") {
		t.Fatalf("err = %v, want a refusal naming %s as no lock file", err, lock)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a bundle was written: %v", err)
	}
	// A real lock file is packed as read.
	if err := os.WriteFile(lock, []byte(hLock), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: out, LockFiles: []LockFile{{Path: lock}}}); err != nil {
		t.Fatal(err)
	}
	es := targz.Read(t, out)
	if got := string(es[hIndex(t, es, LockFilesDir+"/"+LockFileName)].Data); got != hLock {
		t.Errorf("packed lock file %q", got)
	}
}

func TestHardeningCreateFollowsNoLinkedMirrorDirectory(t *testing.T) {
	site := hSite(t)
	elsewhere := filepath.Join(t.TempDir(), "foo")
	providerDir := filepath.Join(site, filepath.FromSlash(hFooDir))
	if err := os.Rename(providerDir, elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, providerDir); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	out := filepath.Join(t.TempDir(), "b.tgz")
	_, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: out})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), strings.TrimSuffix(hFooDir, "/")) {
		t.Fatalf("err = %v, want a refusal naming the linked directory", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a bundle was written: %v", err)
	}
}

func TestHardeningImportRefusesBundledNonLockFile(t *testing.T) {
	es := hBundle(t)
	es = append(es, targz.Regular(LockFilesDir+"/app/"+LockFileName, hPrivateKey))
	file := hWrite(t, targz.Pack(t, relist(t, es), nil))
	extras := filepath.Join(t.TempDir(), "extras")
	hRefused(t, file, ImportOptions{Extras: extras}, "not a lock file")
	if _, err := os.Stat(extras); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("extras written: %v", err)
	}
}

func TestHardeningImportExtrasFollowNoLinks(t *testing.T) {
	lock := filepath.Join(t.TempDir(), LockFileName)
	if err := os.WriteFile(lock, []byte(hLock), 0o644); err != nil {
		t.Fatal(err)
	}
	file := hWrite(t, targz.Pack(t, hBundle(t, LockFile{Name: "app", Path: lock}), nil))

	t.Run("linked directory", func(t *testing.T) {
		extras, victim := t.TempDir(), t.TempDir()
		if err := os.Symlink(victim, filepath.Join(extras, LockFilesDir)); err != nil {
			t.Skipf("symlinks: %v", err)
		}
		dest := filepath.Join(t.TempDir(), "dest")
		_, err := Import(context.Background(), ImportOptions{Bundle: file, Out: dest, Into: dirTarget(t, dest), Extras: extras})
		if err == nil || !strings.Contains(err.Error(), "not followed") {
			t.Fatalf("err = %v, want a refusal to follow the link", err)
		}
		if got := files(t, victim); len(got) != 0 {
			t.Errorf("written through the link: %v", keys(got))
		}
		if got := published(t, dest); len(got) != 0 {
			t.Errorf("the mirror was published although the extras cannot be written: %v", keys(got))
		}
	})
	t.Run("linked file", func(t *testing.T) {
		extras := t.TempDir()
		victim := filepath.Join(t.TempDir(), "victim")
		if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(extras, CLIConfigDir, "tofu-network-mirror.tfrc")
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, target); err != nil {
			t.Skipf("symlinks: %v", err)
		}
		_, err := Import(context.Background(), ImportOptions{Bundle: file, Out: "dest", Into: dirTarget(t, filepath.Join(t.TempDir(), "dest")), Extras: extras})
		if err == nil || !strings.Contains(err.Error(), "not replaced") {
			t.Fatalf("err = %v, want a refusal to replace the link", err)
		}
		if data, _ := os.ReadFile(victim); string(data) != "keep" {
			t.Errorf("victim now %q", data)
		}
	})
	t.Run("modes", func(t *testing.T) {
		extras := filepath.Join(t.TempDir(), "extras")
		if _, err := Import(context.Background(), ImportOptions{Bundle: file, Out: "dest", Into: dirTarget(t, filepath.Join(t.TempDir(), "dest")), Extras: extras}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{LockFilesDir + "/app/" + LockFileName, CLIConfigDir + "/tofu-network-mirror.tfrc"} {
			info, err := os.Lstat(filepath.Join(extras, filepath.FromSlash(name)))
			if err != nil || !info.Mode().IsRegular() || runtime.GOOS != "windows" && info.Mode().Perm() != 0o644 {
				t.Errorf("%s: %v, %v", name, info, err)
			}
		}
	})
}

// --- 11. a bundle cannot amplify ---

// bombBundle is a good bundle plus one listed file of size zeros that
// decompresses from a few bytes per MiB: the gzip stream is made of
// members, the zeros compressed once and repeated.
func bombBundle(t *testing.T, size int64) []byte {
	t.Helper()
	name := "mirror/" + hFooDir + "terraform-provider-foo_1.0.0_bomb.zip"
	es := relist(t, hBundle(t), File{Path: name, SHA256: strings.Repeat("00", 32), Size: size})
	return targz.Bomb(t, es, name, size)
}

func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHardeningGzipBomb: a bundle of well under 1 MiB that declares and
// decompresses to 512 MiB is refused once past inflationFloor, and
// staging never holds more than that bound.
func TestHardeningGzipBomb(t *testing.T) {
	const size = 512 << 20
	bomb := bombBundle(t, size)
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	staging := t.TempDir()
	_, err := unpack(context.Background(), bytes.NewReader(bomb), staging, ImportOptions{Limits: DefaultLimits}, &ImportReport{})
	var refusedErr *RefusedError
	if !errors.As(err, &refusedErr) || !strings.Contains(err.Error(), "compression bomb") {
		t.Fatalf("err = %v, want a refusal as a compression bomb", err)
	}
	bound := int64(inflationFloor + maxInflation*(len(bomb)+1<<20))
	t.Logf("staging %d MiB, bound %d MiB", dirSize(t, staging)>>20, bound>>20)
	if got := dirSize(t, staging); got > bound {
		t.Errorf("staging holds %d bytes, more than the bound of %d", got, bound)
	}
	hRefused(t, hWrite(t, bomb), ImportOptions{}, "compression bomb")
}

// TestHardeningUndeclaredBytes: what the tar format carries besides the
// listed files (here PAX records of about 1 MiB on every entry) counts
// against what the manifest declares.
func TestHardeningUndeclaredBytes(t *testing.T) {
	es := hBundle(t)
	for i := 1; i < len(es); i++ {
		es[i].Header.PAXRecords = map[string]string{"comment": strings.Repeat("a", 1<<20-64)}
		es[i].Header.Format = tar.FormatPAX
	}
	data := targz.Pack(t, es, nil)
	if len(data) > 1<<20 {
		t.Fatalf("the bundle is %d bytes", len(data))
	}
	hRefused(t, hWrite(t, data), ImportOptions{}, "more than its manifest declares")
}

func TestHardeningPaddedDocument(t *testing.T) {
	t.Run("import", func(t *testing.T) {
		es := hBundle(t)
		i := hIndex(t, es, "mirror/"+hFooDir+"index.json")
		es[i].Data = append(es[i].Data, bytes.Repeat([]byte(" "), 1<<20)...)
		hRefused(t, hWrite(t, targz.Pack(t, relist(t, es), nil)), ImportOptions{}, "canonical")
	})
	t.Run("import, duplicate key", func(t *testing.T) {
		es := hBundle(t)
		i := hIndex(t, es, "mirror/"+hFooDoc)
		es[i].Data = bytes.Replace(es[i].Data, []byte(`"url"`), []byte(`"url": "elsewhere.zip", "url"`), 1)
		hRefused(t, hWrite(t, targz.Pack(t, relist(t, es), nil)), ImportOptions{}, "canonical")
	})
	t.Run("create", func(t *testing.T) {
		site := hSite(t)
		index := filepath.Join(site, filepath.FromSlash(hFooDir+"index.json"))
		data, err := os.ReadFile(index)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(index, append(data, "\n\n\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: filepath.Join(t.TempDir(), "b.tgz")})
		var refusedErr *RefusedError
		if !errors.As(err, &refusedErr) || refusedErr.What != "mirror" || !strings.Contains(err.Error(), hFooDir+"index.json: not in the canonical form") {
			t.Fatalf("err = %v, want the mirror refused for its index.json", err)
		}
	})
}

// manyFiles is a canonical manifest listing n files, packed alone.
func manyFiles(t *testing.T, n int) []byte {
	t.Helper()
	m := Manifest{Format: FormatVersion, CreatedBy: createdBy, Files: make([]File, n)}
	for i := range m.Files {
		m.Files[i] = File{Path: fmt.Sprintf("mirror/f/%07d.zip", i), SHA256: strings.Repeat("ab", 32), Size: 1}
	}
	data, err := encodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	return targz.Pack(t, []tarEntry{targz.Regular(ManifestName, string(data))}, nil)
}

// TestHardeningTooManyEntries: a manifest of more files than the default
// limit is refused with one problem, holding little more than itself in
// memory.
func TestHardeningTooManyEntries(t *testing.T) {
	file := hWrite(t, manyFiles(t, DefaultLimits.MaxEntries+1))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	refusedErr := hRefused(t, file, ImportOptions{}, fmt.Sprintf("more than the limit of %d files", DefaultLimits.MaxEntries))
	runtime.ReadMemStats(&after)
	if len(refusedErr.Problems) != 1 {
		t.Errorf("%d problems", len(refusedErr.Problems))
	}
	t.Logf("allocated %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
		t.Errorf("allocated %d MiB", alloc>>20)
	}
}

func TestHardeningManifestTooLarge(t *testing.T) {
	data := targz.Pack(t, []tarEntry{targz.Regular(ManifestName, strings.Repeat(" ", maxManifestBytes+1))}, nil)
	hRefused(t, hWrite(t, data), ImportOptions{}, "larger than the limit")
}

func TestHardeningDocumentTooLarge(t *testing.T) {
	m := Manifest{Format: FormatVersion, CreatedBy: createdBy, Files: []File{
		{Path: "mirror/" + hFooDir + "index.json", SHA256: strings.Repeat("ab", 32), Size: layout.MaxDocumentBytes + 1},
	}}
	data, err := encodeManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	hRefused(t, hWrite(t, targz.Pack(t, []tarEntry{targz.Regular(ManifestName, string(data))}, nil)), ImportOptions{}, "more than the limit")
}

// TestHardeningProblemsSummarised: 30 listed files missing give 20
// problems and a summary.
func TestHardeningProblemsSummarised(t *testing.T) {
	var missing []File
	for i := range 30 {
		missing = append(missing, File{Path: fmt.Sprintf("mirror/x/%02d.zip", i), SHA256: strings.Repeat("ab", 32), Size: 1})
	}
	file := hWrite(t, targz.Pack(t, relist(t, hBundle(t), missing...), nil))
	refusedErr := hRefused(t, file, ImportOptions{}, "not in the bundle")
	if len(refusedErr.Problems) != maxShownProblems+1 || refusedErr.Omitted != 10 {
		t.Fatalf("%d problems, %d omitted", len(refusedErr.Problems), refusedErr.Omitted)
	}
	if last := refusedErr.Problems[maxShownProblems]; !strings.Contains(last.Message, "and 10 more") {
		t.Errorf("last problem %+v", last)
	}
	if !strings.Contains(refusedErr.Error(), "(and 29 more problems)") {
		t.Errorf("error %v", refusedErr)
	}
}

func TestHardeningManifestEncodingIsMarshalIndent(t *testing.T) {
	for _, m := range []Manifest{
		{Format: 1, CreatedBy: "tfmirror", Files: []File{}},
		{Format: 1, CreatedBy: "tfmirror", Files: []File{{Path: "mirror/a<b>&c", SHA256: strings.Repeat("0a", 32), Size: 3}}},
		{Format: 1, CreatedBy: "tfmirror", Files: []File{{Path: "cli-config/x", SHA256: "s", Size: 1}, {Path: "mirror/é", SHA256: "t", Size: 1 << 40}}},
	} {
		got, err := encodeManifest(m)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("encodeManifest:\n%s\nMarshalIndent:\n%s", got, want)
		}
		if len(m.Files) > 1 {
			if _, err := decodeManifest(got, Limits{MaxEntries: len(m.Files) - 1}); err == nil || !strings.Contains(err.Error(), "limit") {
				t.Errorf("over the entry limit: %v", err)
			}
		}
	}
}

// --- 12. version documents point only at their own archives ---

// plant rewrites the site's foo 1.0.0 linux_amd64 url to url, moving the
// archive to where url resolves, so the hashes and provenance still hold.
func plant(t *testing.T, site, url string) string {
	t.Helper()
	to := filepath.Join(site, filepath.FromSlash(hFooDir), filepath.FromSlash(url))
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(site, filepath.FromSlash(hFooArchive)), to); err != nil {
		t.Fatal(err)
	}
	setURL(t, filepath.Join(site, filepath.FromSlash(hFooDoc)), url)
	return to
}

func setURL(t *testing.T, docFile, url string) {
	t.Helper()
	data, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := layout.DecodeVersion(data)
	if err != nil {
		t.Fatal(err)
	}
	a := doc.Archives["linux_amd64"]
	a.URL = url
	doc.Archives["linux_amd64"] = a
	if data, err = layout.Encode(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func verifySite(t *testing.T, site string) *mirror.VerifyReport {
	t.Helper()
	tree, err := layout.OpenExisting(site)
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&mirror.Verifier{Mirror: tree, Checker: signing.Checker{}, TempDir: t.TempDir()}).Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var plantedURLs = []string{
	"../../../.tfmirror/store/planted.zip",
	"../bar/terraform-provider-bar_1.0.0_linux_amd64.zip",
	"terraform-provider-foo_1.0.0_darwin_arm64.zip",
	"./terraform-provider-foo_1.0.0_linux_amd64.zip",
	"../../../../outside.zip",
}

func TestHardeningVerifyRefusesForeignArchiveURL(t *testing.T) {
	for _, url := range plantedURLs {
		t.Run(url, func(t *testing.T) {
			site := hSite(t)
			if !strings.HasPrefix(url, "../../../../") {
				plant(t, site, url)
			} else {
				setURL(t, filepath.Join(site, filepath.FromSlash(hFooDoc)), url)
			}
			r := verifySite(t, site)
			if len(r.Problems) != 1 || r.Problems[0].Path != hFooDoc || !strings.Contains(r.Problems[0].Message, "not this release's own archive") {
				t.Errorf("problems %v, warnings %v", r.Problems, r.Warnings)
			}
			_, err := Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: filepath.Join(t.TempDir(), "b.tgz")})
			var refusedErr *RefusedError
			if !errors.As(err, &refusedErr) || refusedErr.What != "mirror" {
				t.Errorf("create: %v", err)
			}
		})
	}
	t.Run("absolute", func(t *testing.T) {
		site := hSite(t)
		setURL(t, filepath.Join(site, filepath.FromSlash(hFooDoc)), "https://releases.example.com/foo.zip")
		r := verifySite(t, site)
		if len(r.Problems) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0].Message, "not in this mirror; not checked") {
			t.Errorf("problems %v, warnings %v", r.Problems, r.Warnings)
		}
	})
}

// TestHardeningImportRefusesForeignArchiveURL: a bundle whose version
// document points at a planted copy of its archive elsewhere in the
// mirror is refused by the checks before publishing, with nothing written.
func TestHardeningImportRefusesForeignArchiveURL(t *testing.T) {
	for _, url := range plantedURLs[:2] {
		t.Run(url, func(t *testing.T) {
			es := hBundle(t)
			i := hIndex(t, es, "mirror/"+hFooArchive)
			planted := "mirror/" + filepath.ToSlash(filepath.Join(hFooDir, url))
			es[i].Header.Name = planted
			d := hIndex(t, es, "mirror/"+hFooDoc)
			doc, err := layout.DecodeVersion(es[d].Data)
			if err != nil {
				t.Fatal(err)
			}
			a := doc.Archives["linux_amd64"]
			a.URL = url
			doc.Archives["linux_amd64"] = a
			if es[d].Data, err = layout.Encode(doc); err != nil {
				t.Fatal(err)
			}
			file := hWrite(t, targz.Pack(t, relist(t, es), nil))
			refusedErr := hRefused(t, file, ImportOptions{}, "not this release's own archive")
			if p := refusedErr.Problems[0]; p.Path != "mirror/"+hFooDoc {
				t.Errorf("problem %+v, want it at the bundle's version document", p)
			}
		})
	}
}

// --- 12. a bundle's modules are held to the module limits ---

// publishModule publishes the module acme/bomb/aws 1.0.0, whose package
// is data, into the mirror at dir, as a build does.
func publishModule(t *testing.T, dir string, data []byte) {
	t.Helper()
	tree, err := layout.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	f, err := tree.CreateStaged("module.zip")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	rec := layout.ModuleRecord{
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data)), Calls: []layout.ModuleCall{},
		Upstream: layout.ModuleUpstream{Location: "https://files.example/bomb.zip", ArchiveSHA256: hex.EncodeToString(sum[:])},
	}
	_, err = tree.PublishModules(context.Background(), layout.Repair, []layout.ModuleRelease{{
		Module: addrs.MustParseModule("acme/bomb/aws"), Version: addrs.MustParseVersion("1.0.0"), Staged: f.Name(), Move: true, Record: rec,
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHardeningModuleLimits: a bundle's module packages are held to the
// module limits a build packs modules under, whatever the provider
// limits are. A module zip bomb that unpacks past the module limit but
// within the provider limit is refused and nothing is written; a module
// within the module limit is imported even where the provider limit is
// smaller; bundle create refuses what import would.
func TestHardeningModuleLimits(t *testing.T) {
	const size = 8 << 20
	site := t.TempDir()
	publishModule(t, site, zipbuild.Bomb(t, "main.tf", size))
	file := filepath.Join(t.TempDir(), "modules.tgz")
	createWith(t, CreateOptions{Mirror: siteTree(t, site), Out: file})

	moduleLimit := hashing.ModuleLimits{MaxBytes: size / 2}
	refusedErr := hRefused(t, file, ImportOptions{ModuleLimits: moduleLimit, ZipLimits: hashing.ZipLimits{MaxUnpackedBytes: 2 * size}},
		fmt.Sprintf("unpacks to more than the limit of %d bytes", size/2))
	if !strings.Contains(fmt.Sprint(refusedErr.Problems), "acme/bomb/aws 1.0.0") {
		t.Errorf("the refusal does not name the module: %v", refusedErr.Problems)
	}

	dest := filepath.Join(t.TempDir(), "dest")
	report, err := Import(context.Background(), ImportOptions{Bundle: file, Out: dest, Into: dirTarget(t, dest), ZipLimits: hashing.ZipLimits{MaxUnpackedBytes: size / 8}})
	if err != nil || report.ModuleVersions != 1 {
		t.Fatalf("import of a module within the module limits, larger than the provider limit: %+v, %v", report, err)
	}

	_, err = Create(context.Background(), CreateOptions{Mirror: siteTree(t, site), Out: filepath.Join(t.TempDir(), "b.tgz"), ModuleLimits: moduleLimit})
	var createRefused *RefusedError
	if !errors.As(err, &createRefused) || !strings.Contains(fmt.Sprint(err, createRefused.Problems), fmt.Sprintf("limit of %d bytes", size/2)) {
		t.Errorf("bundle create of a module past the module limit: %v", err)
	}
}

// A failure to write the bundle (a full disk) is reported as such; only a
// file of the mirror that ends early is said to have changed.
func TestWriteEntrySaysWhichSideFailed(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 64<<10)
	sum := sha256.Sum256(data)
	e := entry{name: "mirror/a.zip", data: data, file: File{Path: "mirror/a.zip", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}}
	full := errors.New("no space left on device")
	err := writeEntry(tar.NewWriter(&failingWriter{left: 4096, err: full}), e)
	if !errors.Is(err, full) || strings.Contains(err.Error(), "change") {
		t.Errorf("writing to a full disk: err = %v, want the write's error and no word of a change", err)
	}
	short := e
	short.file.Size++
	var buf bytes.Buffer
	if err := writeEntry(tar.NewWriter(&buf), short); err == nil || !strings.Contains(err.Error(), "did it change") {
		t.Errorf("a file shorter than listed: err = %v, want one asking whether it changed", err)
	}
}

// failingWriter takes left bytes, then fails with err.
type failingWriter struct {
	left int
	err  error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, w.err
	}
	w.left -= len(p)
	return len(p), nil
}

// A failure after the mirror was published (recording the change, a full
// disk) comes back with the report of what the import wrote, for the
// summary to say.
func TestImportFailingLateReportsWhatItWrote(t *testing.T) {
	file := hWrite(t, targz.Pack(t, hBundle(t), nil))
	dest := filepath.Join(t.TempDir(), "dest")
	full := errors.New("no space left on device")
	report, err := Import(context.Background(), ImportOptions{Bundle: file, Out: dest, Into: dirTarget(t, dest),
		Record: func(context.Context, *layout.Tree, *layout.Tree, *ImportReport) error { return full }})
	if !errors.Is(err, full) {
		t.Fatalf("err = %v, want the recording's", err)
	}
	if report == nil || report.Written == 0 || report.Written != len(published(t, dest)) || report.Archives == 0 {
		t.Errorf("report %+v, want the %d files the import wrote before it failed", report, len(published(t, dest)))
	}
}

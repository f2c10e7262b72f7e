package replica

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// key is a throwaway release signing key.
type key = pgptest.Key

func newKey(t *testing.T) key { return pgptest.New(t, "replica test") }

// release describes a provider version to publish into a test tree.
type release struct {
	provider, version string
	platforms         []string
	signer            *key   // nil: the origin published no keys
	noRecord          bool   // published without provenance, SHA256SUMS or signature
	hashesOnly        string // the upstream whose hashes alone vouched, if so
}

// upstreamName is the archive's name in the release's SHA256SUMS. It
// differs from the name the network mirror gives the archive, so the tests
// tell them apart.
func upstreamName(typ, version, plat string) string {
	return fmt.Sprintf("%s_%s_%s.zip", typ, version, plat)
}

func archiveBytes(r release, plat string) []byte {
	return []byte("zip of " + r.provider + " " + r.version + " " + plat)
}

func sha(b []byte) [sha256.Size]byte { return sha256.Sum256(b) }

// publish writes a release into tr as a build would: archives, kept
// SHA256SUMS (with a manifest line), signature and provenance.
func publish(t *testing.T, tr *layout.Dir, r release) {
	t.Helper()
	p := addrs.MustParseProvider(r.provider)
	v := addrs.MustParseVersion(r.version)
	rel := layout.Release{Provider: p, Version: v}
	var sums bytes.Buffer
	prov := layout.Provenance{Archives: map[string]layout.ProvenanceArchive{}, SigningKeys: []string{}}
	lines := []string{}
	for _, ps := range r.platforms {
		plat := addrs.MustParsePlatform(ps)
		data := archiveBytes(r, ps)
		f, err := tr.CreateStaged("a")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.SyncClose(f); err != nil {
			t.Fatal(err)
		}
		sum := sha(data)
		rel.Archives = append(rel.Archives, layout.Archive{Platform: plat, Staged: f.Name(), Hashes: []hashing.Hash{hashing.ZH(sum)}})
		name := upstreamName(p.Type, r.version, ps)
		lines = append(lines, hex.EncodeToString(sum[:])+"  "+name+"\n")
		prov.Archives[ps] = layout.ProvenanceArchive{Filename: name, H1: "h1:unused", ZH: hashing.ZH(sum), Size: int64(len(data))}
	}
	manifest := sha([]byte("manifest"))
	lines = append(lines, hex.EncodeToString(manifest[:])+"  "+p.Type+"_"+r.version+"_manifest.json\n")
	slices.Sort(lines)
	for _, l := range lines {
		sums.WriteString(l)
	}
	if !r.noRecord {
		prov.HashesOnly = r.hashesOnly
		rec := &layout.Record{Sums: sums.Bytes(), Provenance: prov}
		if r.signer != nil {
			rec.Signature = r.signer.Sign(t, sums.Bytes())
			rec.Provenance.KeyID = r.signer.ID
			rec.Provenance.SigningKeys = []string{r.signer.Armored}
		}
		rel.Record = rec
	}
	if err := tr.Publish(rel); err != nil {
		t.Fatal(err)
	}
}

func openTree(t *testing.T) *layout.Dir {
	t.Helper()
	tr, err := layout.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func write(t *testing.T, tr *layout.Dir) *Report {
	t.Helper()
	r, err := Write(context.Background(), tr.Tree, Trust{Checker: signing.Checker{}})
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return r
}

func readFile(t *testing.T, tr *layout.Dir, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(tr.Path(filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readJSON(t *testing.T, tr *layout.Dir, rel string, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(readFile(t, tr, rel)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

// resolveInTree resolves a URL reference found in the document at docRel
// the way a client does, against the tree served at an arbitrary prefix,
// and returns the path relative to the tree's root it names.
func resolveInTree(t *testing.T, docRel, ref string) string {
	t.Helper()
	base, err := url.Parse("https://mirror.example/some/prefix/" + docRel)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	u := base.ResolveReference(r)
	rel, ok := strings.CutPrefix(u.Path, "/some/prefix/")
	if u.Host != "mirror.example" || !ok {
		t.Fatalf("%q from %s resolves to %s, outside the tree", ref, docRel, u)
	}
	return rel
}

// replicaFiles lists the files below the replica directory.
func replicaFiles(t *testing.T, tr *layout.Dir) []string {
	t.Helper()
	var out []string
	root := tr.Path(Dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(tr.Root(), p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestWriteSignedRelease(t *testing.T) {
	k := newKey(t)
	tr := openTree(t)
	foo1 := release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}, signer: &k}
	foo2 := release{provider: "hashicorp/foo", version: "1.10.0", platforms: []string{"linux_amd64"}, signer: &k}
	baz := release{provider: "example.com/acme/baz", version: "0.1.0", platforms: []string{"linux_amd64"}, signer: &k}
	for _, r := range []release{foo2, foo1, baz} {
		publish(t, tr, r)
	}

	report := write(t, tr)
	wantReport := &Report{
		Hosts:     []addrs.Hostname{"example.com", "registry.opentofu.org"},
		Providers: 2, Versions: 3, Packages: 4,
		Services: map[addrs.Hostname]map[string]string{
			"example.com":           {"providers.v1": "/replica/example.com/v1/providers/"},
			"registry.opentofu.org": {"providers.v1": "/replica/registry.opentofu.org/v1/providers/"},
		},
	}
	if diff := cmp.Diff(wantReport, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}

	base := "replica/registry.opentofu.org/v1/providers/hashicorp/foo/"
	wantFiles := []string{
		"replica/example.com/.well-known/terraform.json",
		"replica/example.com/v1/providers/acme/baz/0.1.0/download/linux/amd64",
		"replica/example.com/v1/providers/acme/baz/versions",
		"replica/registry.opentofu.org/.well-known/terraform.json",
		base + "1.0.0/download/darwin/arm64",
		base + "1.0.0/download/linux/amd64",
		base + "1.10.0/download/linux/amd64",
		base + "versions",
	}
	if diff := cmp.Diff(wantFiles, replicaFiles(t, tr)); diff != "" {
		t.Errorf("replica files (-want +got):\n%s", diff)
	}

	// The discovery document: providers.v1 for a web server that answers
	// /.well-known/terraform.json of the host from this file.
	var disco map[string]string
	readJSON(t, tr, "replica/registry.opentofu.org/.well-known/terraform.json", &disco)
	if diff := cmp.Diff(map[string]string{"providers.v1": "/replica/registry.opentofu.org/v1/providers/"}, disco); diff != "" {
		t.Errorf("terraform.json (-want +got):\n%s", diff)
	}

	// The versions document: every version, ascending, with its platforms.
	var versions regproto.Versions
	readJSON(t, tr, base+"versions", &versions)
	wantVersions := regproto.Versions{Versions: []regproto.Version{
		{Version: "1.0.0", Protocols: []string{}, Platforms: []regproto.Platform{{OS: "darwin", Arch: "arm64"}, {OS: "linux", Arch: "amd64"}}},
		{Version: "1.10.0", Protocols: []string{}, Platforms: []regproto.Platform{{OS: "linux", Arch: "amd64"}}},
	}}
	if diff := cmp.Diff(wantVersions, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	// A download document: the upstream file name and digest, the signing
	// key with its ID, and URLs that resolve to the network mirror's files.
	docRel := base + "1.0.0/download/darwin/arm64"
	var dl regproto.Download
	readJSON(t, tr, docRel, &dl)
	sum := sha(archiveBytes(foo1, "darwin_arm64"))
	wantDL := regproto.Download{
		Protocols:           []string{},
		OS:                  "darwin",
		Arch:                "arm64",
		Filename:            "foo_1.0.0_darwin_arm64.zip",
		DownloadURL:         "../../../../../../../../../registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_darwin_arm64.zip",
		ShasumsURL:          "../../../../../../../../../registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_SHA256SUMS",
		ShasumsSignatureURL: "../../../../../../../../../registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_SHA256SUMS.sig",
		Shasum:              hex.EncodeToString(sum[:]),
		SigningKeys:         regproto.SigningKeys{GPGPublicKeys: []regproto.GPGKey{{KeyID: k.ID, ASCIIArmor: k.Armored}}},
		// OpenTofu 1.12's packages: every platform of the version.
		Packages: map[string]regproto.Package{
			"darwin_arm64": {Hashes: []string{"h1:unused", string(hashing.ZH(sum))}, PackageSize: int64(len(archiveBytes(foo1, "darwin_arm64")))},
			"linux_amd64":  {Hashes: []string{"h1:unused", string(hashing.ZH(sha(archiveBytes(foo1, "linux_amd64"))))}, PackageSize: int64(len(archiveBytes(foo1, "linux_amd64")))},
		},
	}
	if diff := cmp.Diff(wantDL, dl); diff != "" {
		t.Errorf("download document (-want +got):\n%s", diff)
	}
	p := addrs.MustParseProvider("hashicorp/foo")
	v := addrs.MustParseVersion("1.0.0")
	for ref, want := range map[string]string{
		dl.DownloadURL:         layout.ArchivePath(p, v, addrs.MustParsePlatform("darwin_arm64")),
		dl.ShasumsURL:          layout.SumsPath(p, v),
		dl.ShasumsSignatureURL: layout.SignaturePath(p, v),
	} {
		got := resolveInTree(t, docRel, ref)
		if got != filepath.ToSlash(want) {
			t.Errorf("%q resolves to %s, want %s", ref, got, want)
		}
		if _, err := os.Stat(tr.Path(filepath.FromSlash(got))); err != nil {
			t.Errorf("%q names a file that does not exist: %v", ref, err)
		}
	}
	if !bytes.Contains(readFile(t, tr, filepath.ToSlash(layout.SumsPath(p, v))), []byte(dl.Shasum+"  "+dl.Filename+"\n")) {
		t.Errorf("the kept SHA256SUMS has no line %q", dl.Shasum+"  "+dl.Filename)
	}

	// Files are world-readable, directories traversable.
	for _, rel := range replicaFiles(t, tr) {
		info, err := os.Stat(tr.Path(filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != atomicfile.FileMode {
			t.Errorf("%s has mode %v, want %v", rel, info.Mode().Perm(), atomicfile.FileMode)
		}
	}
}

// Writing again from the same tree changes nothing, not even the files'
// identities; the output does not depend on the order of publication.
func TestWriteIsDeterministic(t *testing.T) {
	k := newKey(t)
	releases := []release{
		{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}, signer: &k},
		{provider: "hashicorp/foo", version: "2.0.0", platforms: []string{"linux_amd64"}, signer: &k},
		{provider: "hashicorp/bar", version: "0.1.0", platforms: []string{"linux_amd64"}},
	}
	contents := func(tr *layout.Dir) map[string]string {
		out := map[string]string{}
		for _, rel := range replicaFiles(t, tr) {
			out[rel] = string(readFile(t, tr, rel))
		}
		return out
	}
	a := openTree(t)
	for _, r := range releases {
		publish(t, a, r)
	}
	write(t, a)
	first := contents(a)
	infos := map[string]os.FileInfo{}
	for rel := range first {
		infos[rel], _ = os.Stat(a.Path(filepath.FromSlash(rel)))
	}
	write(t, a)
	if diff := cmp.Diff(first, contents(a)); diff != "" {
		t.Errorf("second Write changed the replica (-first +second):\n%s", diff)
	}
	for rel, before := range infos {
		after, _ := os.Stat(a.Path(filepath.FromSlash(rel)))
		if !os.SameFile(before, after) {
			t.Errorf("second Write replaced unchanged %s", rel)
		}
	}

	b := openTree(t)
	for _, r := range slices.Backward(releases) {
		publish(t, b, r)
	}
	write(t, b)
	if diff := cmp.Diff(first, contents(b)); diff != "" {
		t.Errorf("publication order changed the replica (-a +b):\n%s", diff)
	}
}

// A release whose origin published no keys is replicated as the origin
// served it: no keys, and a signature URL that answers (clients fetch it
// even then).
func TestWriteUnsignedRelease(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, release{provider: "hashicorp/bar", version: "0.1.0", platforms: []string{"linux_amd64"}})
	write(t, tr)
	docRel := "replica/registry.opentofu.org/v1/providers/hashicorp/bar/0.1.0/download/linux/amd64"
	var dl regproto.Download
	readJSON(t, tr, docRel, &dl)
	if dl.SigningKeys.GPGPublicKeys == nil || len(dl.SigningKeys.GPGPublicKeys) != 0 {
		t.Errorf("signing keys = %#v, want an empty list", dl.SigningKeys.GPGPublicKeys)
	}
	raw := readFile(t, tr, docRel)
	if !bytes.Contains(raw, []byte(`"gpg_public_keys": []`)) {
		t.Errorf("download document does not say \"gpg_public_keys\": []:\n%s", raw)
	}
	sig := resolveInTree(t, docRel, dl.ShasumsSignatureURL)
	if data := readFile(t, tr, sig); len(data) != 0 {
		t.Errorf("%s holds %d bytes, want an empty stand-in", sig, len(data))
	}
}

// A release that only an upstream's hashes vouched for is offered where
// OpenTofu installs unsigned packages (registry.opentofu.org), as an
// unsigned release; on any other host clients would refuse it, so it is
// left out, naming the upstream.
func TestWriteHashesOnlyRelease(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, release{provider: "hashicorp/bar", version: "0.1.0", platforms: []string{"linux_amd64"}, hashesOnly: "filesystem_mirror /vendor"})
	publish(t, tr, release{provider: "example.com/acme/baz", version: "0.1.0", platforms: []string{"linux_amd64"}, hashesOnly: "filesystem_mirror /vendor"})
	report, err := Write(context.Background(), tr.Tree, Trust{Checker: signing.Checker{}})
	if err == nil || !strings.Contains(err.Error(), "example.com/acme/baz 0.1.0") || !strings.Contains(err.Error(), "only hashes from filesystem_mirror /vendor vouch") {
		t.Fatalf("error %v, want the example.com release left out, naming the upstream", err)
	}
	if report == nil || report.Versions != 1 {
		t.Errorf("report %+v, want the registry.opentofu.org release only", report)
	}
	var dl regproto.Download
	readJSON(t, tr, "replica/registry.opentofu.org/v1/providers/hashicorp/bar/0.1.0/download/linux/amd64", &dl)
	if len(dl.SigningKeys.GPGPublicKeys) != 0 {
		t.Errorf("signing keys %#v for a release of hashes only", dl.SigningKeys.GPGPublicKeys)
	}
	if _, err := os.Stat(tr.Path("replica/example.com/v1/providers/acme/baz/0.1.0/download/linux/amd64")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the example.com release of hashes only was offered: %v", err)
	}
}

// A release whose kept signature no longer verifies is left out, reported
// as a verification failure for each of its packages; the rest is written,
// and the earlier replica of that release is removed.
func TestWriteLeavesOutWhatNoLongerVerifies(t *testing.T) {
	k := newKey(t)
	tr := openTree(t)
	good := release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64"}, signer: &k}
	bad := release{provider: "hashicorp/foo", version: "2.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}, signer: &k}
	publish(t, tr, good)
	publish(t, tr, bad)
	write(t, tr)
	badDoc := "replica/registry.opentofu.org/v1/providers/hashicorp/foo/2.0.0/download/linux/amd64"
	if _, err := os.Stat(tr.Path(badDoc)); err != nil {
		t.Fatal(err)
	}

	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("2.0.0")
	sigPath := tr.Path(layout.SignaturePath(p, v))
	sig := readFile(t, tr, filepath.ToSlash(layout.SignaturePath(p, v)))
	sig[len(sig)-1] ^= 1
	if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
		t.Fatal(err)
	}
	report, err := Write(context.Background(), tr.Tree, Trust{Checker: signing.Checker{}})
	var verrs []*mirror.VerificationError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var verr *mirror.VerificationError
		if !errors.As(e, &verr) {
			t.Fatalf("error %v is not a verification error", e)
		}
		verrs = append(verrs, verr)
	}
	var pkgs []string
	for _, e := range verrs {
		pkgs = append(pkgs, e.Package.String())
		if !strings.Contains(e.Error(), "signature does not verify") {
			t.Errorf("error %q does not say the signature does not verify", e)
		}
	}
	want := []string{"registry.opentofu.org/hashicorp/foo 2.0.0 darwin_arm64", "registry.opentofu.org/hashicorp/foo 2.0.0 linux_amd64"}
	if diff := cmp.Diff(want, pkgs); diff != "" {
		t.Errorf("failed packages (-want +got):\n%s", diff)
	}
	if report == nil || report.Versions != 1 || report.Packages != 1 {
		t.Errorf("report %+v, want the good version only", report)
	}
	if _, err := os.Stat(tr.Path(badDoc)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the replica of the bad release is still there: %v", err)
	}
	var versions regproto.Versions
	readJSON(t, tr, "replica/registry.opentofu.org/v1/providers/hashicorp/foo/versions", &versions)
	if len(versions.Versions) != 1 || versions.Versions[0].Version != "1.0.0" {
		t.Errorf("versions = %+v, want 1.0.0 only", versions)
	}
}

// Inconsistencies between the provenance record, SHA256SUMS and the
// archive each leave the package out.
func TestWriteChecksKeptFiles(t *testing.T) {
	k := newKey(t)
	p, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	linux := addrs.MustParsePlatform("linux_amd64")
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, tr *layout.Dir)
		problem string
	}{
		{"archive missing", func(t *testing.T, tr *layout.Dir) {
			if err := os.Remove(tr.Path(layout.ArchivePath(p, v, linux))); err != nil {
				t.Fatal(err)
			}
		}, "the archive is missing"},
		{"archive resized", func(t *testing.T, tr *layout.Dir) {
			if err := os.WriteFile(tr.Path(layout.ArchivePath(p, v, linux)), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "the archive has 1 bytes"},
		{"signature removed", func(t *testing.T, tr *layout.Dir) {
			if err := os.Remove(tr.Path(layout.SignaturePath(p, v))); err != nil {
				t.Fatal(err)
			}
		}, "keeps no signature"},
		{"SHA256SUMS changed", func(t *testing.T, tr *layout.Dir) {
			path := tr.Path(layout.SumsPath(p, v))
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, bytes.Replace(data, []byte("foo_1.0.0_linux_amd64.zip"), []byte("other.zip"), 1), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "signature does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := openTree(t)
			publish(t, tr, release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64"}, signer: &k})
			tc.damage(t, tr)
			report, err := Write(context.Background(), tr.Tree, Trust{Checker: signing.Checker{}})
			var verr *mirror.VerificationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Write error = %v, want a verification error saying %q", err, tc.problem)
			}
			if verr.Package.String() != "registry.opentofu.org/hashicorp/foo 1.0.0 linux_amd64" {
				t.Errorf("failed package %s", verr.Package)
			}
			if report.Packages != 0 || report.Providers != 0 {
				t.Errorf("report %+v, want nothing replicated", report)
			}
			if _, err := os.Stat(tr.Path(VersionsPath(p))); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("versions document written for a provider with nothing to offer: %v", err)
			}
		})
	}
}

// A release the tree keeps without provenance cannot be replicated: a
// warning, not an error.
func TestWriteWithoutProvenance(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64"}, noRecord: true})
	report := write(t, tr)
	if len(report.Warnings) != 1 || !strings.Contains(report.Warnings[0], "registry.opentofu.org/hashicorp/foo 1.0.0: the mirror keeps no SHA256SUMS") {
		t.Errorf("warnings %q", report.Warnings)
	}
	if got := replicaFiles(t, tr); !slices.Equal(got, []string{"replica/registry.opentofu.org/.well-known/terraform.json"}) {
		t.Errorf("replica files %q, want the discovery document only", got)
	}
}

// Files below the replica directory that the tree no longer calls for are
// removed, with the directories they leave empty.
func TestWritePrunes(t *testing.T) {
	k := newKey(t)
	tr := openTree(t)
	publish(t, tr, release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64"}, signer: &k})
	stray := []string{
		"replica/registry.opentofu.org/v1/providers/hashicorp/foo/0.9.0/download/linux/amd64",
		"replica/old.example/.well-known/terraform.json",
		"replica/registry.opentofu.org/v1/providers/hashicorp/foo/1.0.0/download/linux/.tmp-amd64-123",
	}
	for _, rel := range stray {
		if err := atomicfile.WriteFile(tr.Path(rel), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	write(t, tr)
	for _, rel := range stray {
		if _, err := os.Stat(tr.Path(rel)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("stale %s still there: %v", rel, err)
		}
	}
	for _, dir := range []string{"replica/old.example", "replica/registry.opentofu.org/v1/providers/hashicorp/foo/0.9.0"} {
		if _, err := os.Stat(tr.Path(dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("empty directory %s still there: %v", dir, err)
		}
	}
	if len(replicaFiles(t, tr)) != 3 {
		t.Errorf("replica files %q", replicaFiles(t, tr))
	}
}

// An empty tree gets no replica directory at all.
func TestWriteEmptyTree(t *testing.T) {
	tr := openTree(t)
	report := write(t, tr)
	if diff := cmp.Diff(&Report{}, report); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(tr.Path(Dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("replica directory created for an empty tree: %v", err)
	}
}

func TestHostBlock(t *testing.T) {
	got := HostBlock("registry.opentofu.org", "https://mirror.example.com/")
	want := `host "registry.opentofu.org" {
  services = { "providers.v1" = "https://mirror.example.com/replica/registry.opentofu.org/v1/providers/" }
}
`
	if got != want {
		t.Errorf("HostBlock =\n%s\nwant\n%s", got, want)
	}
}

// A provider of a host named "replica" would share the replica's
// directory; Write refuses rather than prune its network mirror files.
func TestWriteRefusesHostNamedReplica(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, release{provider: "replica/acme/foo", version: "1.0.0", platforms: []string{"linux_amd64"}})
	if _, err := Write(context.Background(), tr.Tree, Trust{Checker: signing.Checker{}}); err == nil || !strings.Contains(err.Error(), `host named "replica"`) {
		t.Fatalf("Write error = %v, want a refusal naming the host", err)
	}
	if _, err := os.Stat(tr.Path("replica/acme/foo/index.json")); err != nil {
		t.Errorf("the provider's network mirror files were touched: %v", err)
	}
}

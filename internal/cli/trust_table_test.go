package cli

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/bundle"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/layout"
)

// What a command decided about a release.
const (
	verdictTrusted = "trusted"
	verdictRefused = "refused"
)

// TestTrustDecisionIsTheSameForEveryCommand runs each command that decides
// whether a release is trusted on the same release, under the same
// manifest (one trust "*" block allowing only the release key and a
// retired, expired one), and requires one verdict per release: build on
// what an origin serves, and lock, verify, replica and bundle import on
// what a mirror tree (or a bundle of it) keeps of that origin.
//
// The origin is the registry protocol written out for the one release and
// served statically, so the build sees byte for byte the SHA256SUMS,
// signature and keys that the tree and the bundle keep (fakeregistry signs
// only with its own keys, none of them expired). The trees and bundles
// are written directly, since a build or "bundle create" would refuse
// some of them.
func TestTrustDecisionIsTheSameForEveryCommand(t *testing.T) {
	current := newReleaseKey(t, "release key")
	outsider := newReleaseKey(t, "outsider")
	retired := expiredKey(t)
	checkKeyFixtures(t, current, outsider, retired)
	trustBlock := `trust "*" {
  key_ids = ["` + current.Fingerprint + `", "` + retired.ID + `"]
}
`
	cases := []struct {
		name     string
		host     addrs.Hostname
		evidence func(sums []byte) trustEvidence
		want     string
		because  string // in the output of every command that refuses
	}{
		{"signed by an allowed key", addrs.DefaultRegistryHost, signedWith(current), verdictTrusted, ""},
		{"signed by a key outside key_ids", addrs.DefaultRegistryHost, signedWith(outsider), verdictRefused, "does not allow"},
		// expired_keys defaults to "warn": accepted with a warning, as OpenTofu does.
		{"signed by an expired allowed key", addrs.DefaultRegistryHost, signedWith(retired), verdictTrusted, ""},
		// OpenTofu installs unsigned packages from its own registry, with a warning.
		{"unsigned on registry.opentofu.org", addrs.DefaultRegistryHost, unsignedEvidence, verdictTrusted, ""},
		{"unsigned on another host", "example.com", unsignedEvidence, verdictRefused, "example.com packages must be signed"},
		{"signature does not verify", addrs.DefaultRegistryHost, badSignature(current), verdictRefused, "invalid signature"},
	}
	commands := []struct {
		name string
		run  func(*testing.T, *trustCell) (verdict, output string)
	}{
		{"build", trustBuild},
		{"lock", trustLock},
		{"verify", trustVerify},
		{"replica", trustReplica},
		{"bundle import", trustBundleImport},
	}

	for _, tc := range cases {
		cell := newTrustCell(t, tc.host, tc.evidence, trustBlock)
		row := make([]string, 0, len(commands))
		agree := true
		for _, cmd := range commands {
			got, out := cmd.run(t, cell)
			row = append(row, cmd.name+"="+got)
			switch {
			case got != tc.want:
				agree = false
				t.Errorf("%s, %s: %s, want %s\n%s", tc.name, cmd.name, got, tc.want, indented(out))
			case got == verdictRefused && !strings.Contains(out, tc.because):
				t.Errorf("%s, %s: refused, but the output does not say %q\n%s", tc.name, cmd.name, tc.because, indented(out))
			}
		}
		if !agree {
			t.Errorf("%s (want %s everywhere): %s", tc.name, tc.want, strings.Join(row, ", "))
		} else {
			t.Logf("%s: %s everywhere", tc.name, tc.want)
		}
	}
}

// releaseKey is a key that signs a release's SHA256SUMS.
type releaseKey struct {
	ID          string // 16 hex digits
	Fingerprint string // 40 hex digits
	Armored     string
	sign        func(doc []byte) []byte
}

func newReleaseKey(t *testing.T, name string) releaseKey {
	k := pgptest.New(t, name)
	return releaseKey{ID: k.ID, Fingerprint: fingerprintOf(k.Entity), Armored: k.Armored, sign: func(doc []byte) []byte { return k.Sign(t, doc) }}
}

// expiredKey is a key made 30 days ago with a lifetime of one day, which
// signed an hour after it was made: its signatures verify, by an expired
// key.
func expiredKey(t *testing.T) releaseKey {
	t.Helper()
	made := time.Now().Add(-30 * 24 * time.Hour)
	e, err := openpgp.NewEntity("retired key", "", "retired@example.invalid", &packet.Config{
		Algorithm: packet.PubKeyAlgoEdDSA, KeyLifetimeSecs: 24 * 60 * 60, Time: func() time.Time { return made },
	})
	if err != nil {
		t.Fatal(err)
	}
	signedAt := &packet.Config{Time: func() time.Time { return made.Add(time.Hour) }}
	return releaseKey{
		ID:          strings.ToUpper(e.PrimaryKey.KeyIdString()),
		Fingerprint: fingerprintOf(e),
		Armored:     pgptest.Armor(t, openpgp.PublicKeyType, e.Serialize),
		sign: func(doc []byte) []byte {
			var buf bytes.Buffer
			if err := openpgp.DetachSign(&buf, e, bytes.NewReader(doc), signedAt); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		},
	}
}

func fingerprintOf(e *openpgp.Entity) string {
	return strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}

// checkKeyFixtures makes sure the keys are what the cases say, so a
// refusal is for the reason the case names: every key makes a valid
// signature, and only the retired key is expired.
func checkKeyFixtures(t *testing.T, keys ...releaseKey) {
	t.Helper()
	doc := []byte("fixture\n")
	for i, k := range keys {
		s, err := signing.Verify(doc, k.sign(doc), []string{k.Armored})
		if err != nil || s.KeyID != k.ID || s.Expired != (i == len(keys)-1) {
			t.Fatalf("key %s: signing.Verify = %+v, %v", k.ID, s, err)
		}
	}
}

// trustEvidence is what an origin publishes to authenticate SHA256SUMS.
type trustEvidence struct {
	Signature []byte   // nil: unsigned
	Keys      []string // the advertised keys, ASCII-armored
	KeyID     string   // the key a mirror records as the signer
}

func signedWith(k releaseKey) func([]byte) trustEvidence {
	return func(sums []byte) trustEvidence {
		return trustEvidence{Signature: k.sign(sums), Keys: []string{k.Armored}, KeyID: k.ID}
	}
}

func unsignedEvidence([]byte) trustEvidence { return trustEvidence{} }

// badSignature is a well-formed signature by the advertised key, over
// other bytes than the SHA256SUMS it comes with.
func badSignature(k releaseKey) func([]byte) trustEvidence {
	return func(sums []byte) trustEvidence {
		return trustEvidence{Signature: k.sign(append(slices.Clone(sums), "tampered\n"...)), Keys: []string{k.Armored}, KeyID: k.ID}
	}
}

// trustCell is one release, served by its origin, and the manifest every
// command gets.
type trustCell struct {
	provider addrs.Provider
	version  addrs.Version
	platform addrs.Platform
	archive  []byte
	sums     []byte
	evidence trustEvidence
	manifest string   // the manifest file (--config of every command)
	environ  []string // trusts the origin's certificate
}

func newTrustCell(t *testing.T, host addrs.Hostname, evidence func([]byte) trustEvidence, trustBlock string) *trustCell {
	t.Helper()
	c := &trustCell{
		provider: addrs.Provider{Hostname: host, Namespace: "hashicorp", Type: "foo"},
		version:  mustParseAddr(t, addrs.ParseVersion, "1.0.0"),
		platform: mustParseAddr(t, addrs.ParsePlatform, "linux_amd64"),
	}
	c.archive = tinyProviderZip(t, "terraform-provider-foo_v1.0.0")
	c.sums = []byte(sha256Hex(c.archive) + "  " + c.upstreamName() + "\n")
	c.evidence = evidence(c.sums)

	originDir := t.TempDir()
	c.writeOrigin(t, originDir)
	served := serveStatic(t, originDir)
	c.environ = served.environ
	dir := t.TempDir()
	c.manifest = filepath.Join(dir, "mirror.hcl")
	manifest := `platforms = ["linux_amd64"]
provider "` + c.provider.String() + `" { versions = "1.0.0" }
host "` + string(host) + `" {
  services = { "providers.v1" = "` + served.url + `v1/providers/" }
}
` + trustBlock
	if err := os.WriteFile(c.manifest, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

func mustParseAddr[T any](t *testing.T, parse func(string) (T, error), s string) T {
	t.Helper()
	v, err := parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tinyProviderZip is a provider package holding one executable.
func tinyProviderZip(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = w.Write([]byte("#!/bin/sh\necho trust table\n"))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func (c *trustCell) upstreamName() string { return "terraform-provider-foo_1.0.0_linux_amd64.zip" }

// writeOrigin writes the provider registry protocol's documents and the
// release files for the cell's release into dir, to be served statically.
func (c *trustCell) writeOrigin(t *testing.T, dir string) {
	t.Helper()
	keys := []regproto.GPGKey{}
	for _, k := range c.evidence.Keys {
		id, err := signing.KeyID(k)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, regproto.GPGKey{KeyID: id, ASCIIArmor: k})
	}
	base := "v1/providers/hashicorp/foo/"
	versions, _ := json.Marshal(regproto.Versions{Versions: []regproto.Version{{
		Version: "1.0.0", Protocols: []string{"5.0"}, Platforms: []regproto.Platform{{OS: "linux", Arch: "amd64"}},
	}}})
	download, _ := json.Marshal(regproto.Download{
		Protocols: []string{"5.0"}, OS: "linux", Arch: "amd64", Filename: c.upstreamName(),
		DownloadURL:         "/releases/" + c.upstreamName(),
		ShasumsURL:          "/releases/terraform-provider-foo_1.0.0_SHA256SUMS",
		ShasumsSignatureURL: "/releases/terraform-provider-foo_1.0.0_SHA256SUMS.sig",
		Shasum:              sha256Hex(c.archive),
		SigningKeys:         regproto.SigningKeys{GPGPublicKeys: keys},
	})
	files := map[string][]byte{
		base + "versions":                                  versions,
		base + "1.0.0/download/linux/amd64":                download,
		"releases/" + c.upstreamName():                     c.archive,
		"releases/terraform-provider-foo_1.0.0_SHA256SUMS": c.sums,
	}
	if c.evidence.Signature != nil {
		files["releases/terraform-provider-foo_1.0.0_SHA256SUMS.sig"] = c.evidence.Signature
	}
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// tree writes a new mirror tree keeping the cell's release, as a build
// that trusted it would have: the archive, its documents, and the origin's
// SHA256SUMS, signature and keys.
func (c *trustCell) tree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "mirror")
	d, err := layout.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	f, err := d.CreateStaged("archive")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(c.archive); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SyncClose(f); err != nil {
		t.Fatal(err)
	}
	hashes, err := hashing.HashArchive(f.Name(), sha256.Sum256(c.archive), hashing.DefaultZipLimits)
	if err != nil {
		t.Fatal(err)
	}
	keys := c.evidence.Keys
	if keys == nil {
		keys = []string{}
	}
	err = d.Publish(layout.Release{
		Provider: c.provider,
		Version:  c.version,
		Archives: []layout.Archive{{Platform: c.platform, Staged: f.Name(), Hashes: hashes.All()}},
		Record: &layout.Record{
			Sums:      c.sums,
			Signature: c.evidence.Signature,
			Provenance: layout.Provenance{
				Archives: map[string]layout.ProvenanceArchive{c.platform.String(): {
					Filename: c.upstreamName(), H1: hashes.H1Unpacked, ZH: hashes.ZH, Size: int64(len(c.archive)),
				}},
				KeyID:       c.evidence.KeyID,
				SigningKeys: keys,
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// bundleOfTree packs a mirror tree into a bundle as "bundle create" would,
// without its checks: manifest.json first, then every file of the tree
// under mirror/.
func bundleOfTree(t *testing.T, root string) string {
	t.Helper()
	var files []bundle.File
	data := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == layout.PrivateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name := bundle.MirrorDir + "/" + rel
		data[name] = b
		files = append(files, bundle.File{Path: name, SHA256: sha256Hex(b), Size: int64(len(b))})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(files, func(a, b bundle.File) int { return strings.Compare(a.Path, b.Path) })
	manifest, err := json.MarshalIndent(bundle.Manifest{Format: bundle.FormatVersion, CreatedBy: "tfmirror", Files: files}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	entries := []targz.Entry{targz.Regular(bundle.ManifestName, string(manifest)+"\n")}
	for _, f := range files {
		entries = append(entries, targz.Entry{
			Header: tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o644, ModTime: time.Unix(0, 0)},
			Data:   data[f.Path],
		})
	}
	file := filepath.Join(t.TempDir(), "release.tar.gz")
	targz.Write(t, file, entries)
	return file
}

// run runs tfmirror in dir with the origin's certificate trusted, and
// returns its exit code and a transcript for failure messages.
func (c *trustCell) run(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	code, stdout, stderr := origin{environ: c.environ}.run(t, dir, args...)
	return code, stdout, fmt.Sprintf("$ tfmirror %s\nexit %d\nstdout:\n%sstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
}

// trustVerdict reads a command's outcome: trusted is exit 0 with the release
// taken in, refused is exit 3 with nothing of it taken in; anything else
// is neither, and says what was seen.
func trustVerdict(code int, taken, untouched bool) string {
	switch {
	case code == ExitOK && taken:
		return verdictTrusted
	case code == ExitVerification && untouched:
		return verdictRefused
	}
	return fmt.Sprintf("neither trusted nor refused (exit %d, release taken in: %t, nothing of it taken in: %t)", code, taken, untouched)
}

func treeHas(root, rel string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// trustBuild: the build publishes what the origin serves, or nothing of it.
func trustBuild(t *testing.T, c *trustCell) (string, string) {
	site := filepath.Join(t.TempDir(), "site")
	code, _, out := c.run(t, t.TempDir(), "build", "--config", c.manifest, "--out", site)
	doc := treeHas(site, layout.VersionPath(c.provider, c.version))
	zip := treeHas(site, layout.ArchivePath(c.provider, c.version, c.platform))
	return trustVerdict(code, doc && zip, !doc && !zip), out
}

// trustLock: lock writes the lock file of a module needing the provider.
func trustLock(t *testing.T, c *trustCell) (string, string) {
	tree := c.tree(t)
	module := t.TempDir()
	main := `terraform {
  required_providers {
    foo = { source = "` + c.provider.String() + `" }
  }
}
`
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, out := c.run(t, module, "lock", "--mirror", tree, "--config", c.manifest, "--platform", c.platform.String())
	written := treeHas(module, ".terraform.lock.hcl")
	return trustVerdict(code, written, !written), out
}

// trustVerify: verify finds no problem, or reports one.
func trustVerify(t *testing.T, c *trustCell) (string, string) {
	code, stdout, out := c.run(t, t.TempDir(), "verify", c.tree(t), "--config", c.manifest)
	problem := strings.Contains(stdout, "problem  ")
	return trustVerdict(code, !problem, problem), out
}

// trustReplica: the registry replica offers the release, or leaves it out.
func trustReplica(t *testing.T, c *trustCell) (string, string) {
	tree := c.tree(t)
	code, _, out := c.run(t, t.TempDir(), "replica", tree, "--config", c.manifest)
	offered := treeHas(tree, replica.DownloadPath(c.provider, c.version, c.platform))
	return trustVerdict(code, offered, !offered), out
}

// trustBundleImport: import publishes the bundle's release into a new
// destination, or leaves the destination as it was.
func trustBundleImport(t *testing.T, c *trustCell) (string, string) {
	file := bundleOfTree(t, c.tree(t))
	dest := filepath.Join(t.TempDir(), "dest")
	before := snapshot(t, dest)
	code, _, out := c.run(t, t.TempDir(), "bundle", "import", file, "--out", dest, "--config", c.manifest)
	after := snapshot(t, dest)
	published := treeHas(dest, layout.VersionPath(c.provider, c.version)) && treeHas(dest, layout.ArchivePath(c.provider, c.version, c.platform))
	return trustVerdict(code, published, maps.Equal(before, after)), out
}

func indented(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

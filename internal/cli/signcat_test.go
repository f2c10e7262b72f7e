package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
)

// signedOrigin publishes foo 1.0.0 and bar 1.0.0 (whose zips hold
// directory entries, so a lock records their own h1: too) and writes a
// manifest for both into a new directory, returned with the operator's
// key files.
func signedOrigin(t *testing.T) (o origin, dir, private, public string) {
	t.Helper()
	o = newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	o.reg.AddWithOptions("hashicorp", "bar", "1.0.0", fakeregistry.Options{DirEntries: true}, "linux_amd64", "darwin_arm64")
	dir = t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
provider "hashicorp/bar" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	private, public = pgptest.New(t, "operator").WriteFiles(t, t.TempDir(), "operator")
	return o, dir, private, public
}

// fooBarRootModule requires foo and bar 1.0.0.
func fooBarRootModule(t *testing.T) string {
	t.Helper()
	module := t.TempDir()
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(`terraform {
  required_providers {
    foo = { source = "hashicorp/foo", version = "1.0.0" }
    bar = { source = "hashicorp/bar", version = "1.0.0" }
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return module
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// flipByte changes one byte of a file in place, keeping its size.
func flipByte(t *testing.T, path string) (restore func()) {
	t.Helper()
	data := readFile(t, path)
	changed := bytes.Clone(data)
	changed[len(changed)/2] ^= 1
	writeFile(t, path, changed)
	return func() { writeFile(t, path, data) }
}

func TestSignedCatalogVerified(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	catalog, sigPath := filepath.Join(site, layout.CatalogPath), filepath.Join(site, layout.CatalogSignaturePath)
	c, err := layout.DecodeCatalog(readFile(t, catalog))
	if err != nil || len(c.Archives) != 4 {
		t.Fatalf("catalog.json lists %d archives (%v), want 4", len(c.Archives), err)
	}
	bar := "registry.opentofu.org/hashicorp/bar/terraform-provider-bar_1.0.0_linux_amd64.zip"
	if c.Archives[bar].H1Zip == "" || c.Archives[bar].H1Zip == c.Archives[bar].H1 {
		t.Errorf("bar's zip holds directory entries: want its own h1_zip, got %+v", c.Archives[bar])
	}
	if !strings.HasPrefix(string(readFile(t, sigPath)), "-----BEGIN PGP SIGNATURE-----") {
		t.Fatalf("%s is not an armored signature", sigPath)
	}
	verifyCatalog := func(want int, mention string) {
		t.Helper()
		code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
		if code != want || !strings.Contains(stdout+stderr, mention) {
			t.Fatalf("verify --catalog-key: exit %d, want %d mentioning %q\n%s%s", code, want, mention, stdout, stderr)
		}
	}
	verifyCatalog(ExitOK, " 0 problems")

	// A build that changes nothing writes nothing: the signature stays.
	sig, info := readFile(t, sigPath), stat(t, sigPath)
	mustRun(t, o, dir, "build", "--sign-key", private)
	if !bytes.Equal(readFile(t, sigPath), sig) || !stat(t, sigPath).ModTime().Equal(info.ModTime()) {
		t.Error("a no-op build signed the catalog again")
	}

	// One byte of an archive, then of the catalog.
	foo := filepath.Join(site, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_1.0.0_darwin_arm64.zip")
	restore := flipByte(t, foo)
	verifyCatalog(ExitVerification, "terraform-provider-foo_1.0.0_darwin_arm64.zip: the signed catalog lists zh:")
	restore()
	restore = flipByte(t, catalog)
	verifyCatalog(ExitVerification, "catalog.json.asc: ")
	if _, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site); strings.Contains(stdout+stderr, "catalog.json.asc: catalog.json.asc") {
		t.Errorf("the problem names its path twice:\n%s%s", stdout, stderr)
	}
	restore()
	verifyCatalog(ExitOK, " 0 problems")

	// An archive the catalog does not list.
	stray := filepath.Join(site, "registry.opentofu.org", "hashicorp", "foo", "terraform-provider-foo_9.0.0_linux_amd64.zip")
	writeFile(t, stray, readFile(t, foo))
	verifyCatalog(ExitVerification, "terraform-provider-foo_9.0.0_linux_amd64.zip: the mirror holds this archive, but the signed catalog does not list it")
	if err := os.Remove(stray); err != nil {
		t.Fatal(err)
	}

	// Another operator's key vouches for nothing.
	_, otherPublic := pgptest.New(t, "other").WriteFiles(t, t.TempDir(), "other")
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", otherPublic, site)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "catalog.json.asc") {
		t.Errorf("verify with another key: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, "PRIVATE KEY") {
		t.Error("the output shows key material")
	}
}

// What a signed catalog says beside the archives is held to the tree:
// a deprecation planted in it, a release's signer edited in its
// provenance, and SBOMs taken out of the provenance with their files are
// each a problem naming the file (verify passed them, and the next
// signing build signed them).
func TestSignedCatalogFactsVerified(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	foo, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	verifyCatalog := func(want int, mention string) {
		t.Helper()
		code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
		if code != want || !strings.Contains(stdout+stderr, mention) {
			t.Errorf("verify --catalog-key: exit %d, want %d mentioning %q\n%s%s", code, want, mention, stdout, stderr)
		}
	}
	edit := func(rel string, change func([]byte) []byte) (restore func()) {
		t.Helper()
		path := filepath.Join(site, filepath.FromSlash(rel))
		before, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		writeFile(t, path, change(before))
		return func() {
			if before == nil {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				return
			}
			writeFile(t, path, before)
		}
	}

	warnings := layout.WarningsPath(foo)
	restore := edit(warnings, func([]byte) []byte { return []byte(`{"warnings":["DEPRECATED: use evil/foo"]}` + "\n") })
	verifyCatalog(ExitVerification, warnings+": the signed catalog gives registry.opentofu.org/hashicorp/foo the warnings")
	restore()

	prov := layout.ProvenancePath(foo, v)
	restore = edit(prov, func(b []byte) []byte {
		return regexp.MustCompile(`"key_created": "[^"]*"`).ReplaceAll(b, []byte(`"key_created": "2001-01-01T00:00:00Z"`))
	})
	verifyCatalog(ExitVerification, "catalog.json: the signed catalog says registry.opentofu.org/hashicorp/foo was signed by")
	restore()

	restore = edit(prov, func(b []byte) []byte {
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, a := range doc["archives"].(map[string]any) {
			delete(a.(map[string]any), "sbom")
			delete(a.(map[string]any), "go_version")
		}
		out, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	var restoreSBOMs []func()
	for _, plat := range []string{"linux_amd64", "darwin_arm64"} {
		sbom := layout.SBOMPath(foo, v, addrs.MustParsePlatform(plat))
		restoreSBOMs = append(restoreSBOMs, edit(sbom, func(b []byte) []byte { return b }))
		if err := os.Remove(filepath.Join(site, filepath.FromSlash(sbom))); err != nil {
			t.Fatal(err)
		}
	}
	verifyCatalog(ExitVerification, "terraform-provider-foo_1.0.0_linux_amd64.zip: the signed catalog lists zh:")
	verifyCatalog(ExitVerification, "no SBOM")
	restore()
	for _, r := range restoreSBOMs {
		r()
	}
	verifyCatalog(ExitOK, " 0 problems")

	// The version document edited to send clients elsewhere, to drop a
	// platform, or to drop an archive's zh:: the signed catalog still
	// lists each archive.
	doc := layout.VersionPath(foo, v)
	archive := "terraform-provider-foo_1.0.0_linux_amd64.zip"
	for name, change := range map[string]func(map[string]any){
		"another host": func(d map[string]any) {
			a := d["archives"].(map[string]any)["linux_amd64"].(map[string]any)
			a["url"] = "https://evil.example/" + archive
		},
		"a platform dropped": func(d map[string]any) { delete(d["archives"].(map[string]any), "linux_amd64") },
		"zh: dropped": func(d map[string]any) {
			a := d["archives"].(map[string]any)["linux_amd64"].(map[string]any)
			a["hashes"] = a["hashes"].([]any)[:1]
		},
	} {
		t.Run(name, func(t *testing.T) {
			restore := edit(doc, func(b []byte) []byte {
				var d map[string]any
				if err := json.Unmarshal(b, &d); err != nil {
					t.Fatal(err)
				}
				change(d)
				out, err := json.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				return out
			})
			defer restore()
			verifyCatalog(ExitVerification, archive+": the signed catalog lists this archive, but its version's <version>.json no longer lists it")
		})
	}
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A writer without the key keeps the listing current and drops the
// signature, never leaving it next to other bytes; build, replica and
// prune with --sign-key sign again.
func TestSignedCatalogAfterUnsignedWriters(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	sigPath := filepath.Join(site, layout.CatalogSignaturePath)
	listed := func(want int) layout.Catalog {
		t.Helper()
		c, err := layout.DecodeCatalog(readFile(t, filepath.Join(site, layout.CatalogPath)))
		if err != nil || len(c.Archives) != want {
			t.Fatalf("catalog.json lists %d archives (%v), want %d", len(c.Archives), err, want)
		}
		return c
	}
	unsigned := func(after string) {
		t.Helper()
		if _, err := os.Stat(sigPath); !os.IsNotExist(err) {
			t.Fatalf("%s kept the signature of the catalog it changed (%v)", after, err)
		}
	}
	verified := func(after string) {
		t.Helper()
		if out := mustRun(t, o, t.TempDir(), "verify", "--catalog-key", public, site); !strings.Contains(out, " 0 problems") {
			t.Errorf("verify after %s:\n%s", after, out)
		}
	}
	wantFoo := func(version string) {
		t.Helper()
		o.reg.Add("hashicorp", "foo", version, "linux_amd64", "darwin_arm64")
		writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "`+version+`" }
provider "hashicorp/bar" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	}

	wantFoo("1.1.0")
	mustRun(t, o, dir, "build")
	unsigned("an unsigned build")
	listed(6)
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "no signature") {
		t.Fatalf("verify of an unsigned catalog: exit %d\n%s%s", code, stdout, stderr)
	}
	mustRun(t, o, dir, "replica", "site", "--sign-key", private)
	verified("replica --sign-key")

	mustRun(t, o, dir, "prune", "--out", "site", "--grace", "0s")
	unsigned("an unsigned prune")
	if _, ok := listed(4).Archives["registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"]; ok {
		t.Error("the catalog still lists a pruned archive")
	}
	mustRun(t, o, dir, "build", "--sign-key", private) // publishes nothing
	verified("a build --sign-key that publishes nothing")

	wantFoo("1.2.0")
	mustRun(t, o, dir, "build", "--sign-key", private)
	listed(6)
	mustRun(t, o, dir, "prune", "--out", "site", "--grace", "0s", "--sign-key", private)
	listed(4)
	verified("prune --sign-key")
}

// archiveCounter serves a directory over TLS and counts archive requests.
type archiveCounter struct {
	mu       sync.Mutex
	archives []string
}

func (c *archiveCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.archives
	c.archives = nil
	return out
}

func serveCounted(t *testing.T, o *origin, site string) (string, *archiveCounter) {
	t.Helper()
	c := &archiveCounter{}
	url := serveSiteSeeing(t, o, site, "application/json", func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".zip") {
			c.mu.Lock()
			c.archives = append(c.archives, r.URL.Path)
			c.mu.Unlock()
		}
	})
	return url, c
}

// lockWith runs lock in a new copy of the root module and returns the
// lock file it wrote and its output.
func lockWith(t *testing.T, o origin, want int, args ...string) ([]byte, string) {
	t.Helper()
	module := fooBarRootModule(t)
	code, stdout, stderr := o.run(t, module, append([]string{"lock", "--platform", "linux_amd64", "--platform", "darwin_arm64"}, args...)...)
	if code != want {
		t.Fatalf("lock %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	if want != ExitOK {
		return nil, stdout + stderr
	}
	return readFile(t, filepath.Join(module, ".terraform.lock.hcl")), stdout + stderr
}

func TestLockFromSignedCatalogDownloadsNothing(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	url, counter := serveCounted(t, &o, site)

	downloaded, _ := lockWith(t, o, ExitOK, "--mirror", url)
	if n := len(counter.take()); n != 4 {
		t.Fatalf("lock without --catalog-key fetched %d archives, want 4", n)
	}
	fast, out := lockWith(t, o, ExitOK, "--mirror", url, "--catalog-key", public)
	if got := counter.take(); len(got) != 0 {
		t.Errorf("lock --catalog-key fetched archives: %v", got)
	}
	if !bytes.Equal(fast, downloaded) {
		t.Errorf("lock --catalog-key wrote\n%s\nlock that downloads wrote\n%s", fast, downloaded)
	}
	if strings.Contains(out, "downloading") {
		t.Errorf("lock --catalog-key said it downloads:\n%s", out)
	}

	// The manifest may name the key instead (relative to it).
	conf := t.TempDir()
	writeFile(t, filepath.Join(conf, "operator.pub.asc"), readFile(t, public))
	writeManifest(t, conf, "settings {\n  catalog_key = \"operator.pub.asc\"\n}\n")
	fromManifest, _ := lockWith(t, o, ExitOK, "--mirror", url, "--config", filepath.Join(conf, "mirror.hcl"))
	if got := counter.take(); len(got) != 0 || !bytes.Equal(fromManifest, downloaded) {
		t.Errorf("lock with the manifest's catalog_key fetched %v, wrote\n%s", got, fromManifest)
	}

	// A catalog the operator signed without one archive: that one is
	// downloaded, saying why, and the lock is the same.
	key, err := signing.ReadSigningKey(readFile(t, private))
	if err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(site, layout.CatalogPath)
	signedBytes, signedSig := readFile(t, catalog), readFile(t, filepath.Join(site, layout.CatalogSignaturePath))
	c, err := layout.DecodeCatalog(signedBytes)
	if err != nil {
		t.Fatal(err)
	}
	left := "registry.opentofu.org/hashicorp/bar/terraform-provider-bar_1.0.0_darwin_arm64.zip"
	delete(c.Archives, left)
	signCatalogAs(t, site, key, c)
	partial, out := lockWith(t, o, ExitOK, "--mirror", url, "--catalog-key", public)
	if got := counter.take(); len(got) != 1 || got[0] != "/"+left {
		t.Errorf("lock with a catalog leaving out %s fetched %v", left, got)
	}
	if !bytes.Equal(partial, downloaded) {
		t.Errorf("lock with a partial catalog wrote\n%s\nwant\n%s", partial, downloaded)
	}
	if !strings.Contains(out, "registry.opentofu.org/hashicorp/bar 1.0.0: downloading the archives to hash them: the signed catalog does not list it (darwin_arm64)") {
		t.Errorf("lock did not say why it downloads:\n%s", out)
	}

	// A catalog whose signature fails is refused, and nothing is fetched.
	writeFile(t, catalog, bytes.Replace(signedBytes, []byte("h1:"), []byte("h1:A"), 1))
	writeFile(t, filepath.Join(site, layout.CatalogSignaturePath), signedSig)
	_, out = lockWith(t, o, ExitVerification, "--mirror", url, "--catalog-key", public)
	if !strings.Contains(out, "not vouched for by the catalog key") || len(counter.take()) != 0 {
		t.Errorf("lock with a broken catalog signature:\n%s", out)
	}
}

// signCatalogAs writes c as catalog.json of site, signed with key, as an
// operator's own tool would.
func signCatalogAs(t *testing.T, site string, key *signing.SigningKey, c layout.Catalog) {
	t.Helper()
	data, err := layout.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := key.SignArmored(data)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(site, layout.CatalogPath), data)
	writeFile(t, filepath.Join(site, layout.CatalogSignaturePath), sig)
}

func TestSignedCatalogInBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	o, dir, private, public := signedOrigin(t)
	o.environ = append(o.environ, srv.Environ()...)
	o.environ = append(o.environ, "XDG_CACHE_HOME="+t.TempDir())
	bucket := srv.URI("mirror", "site/")
	mustRun(t, o, dir, "build", "--out", bucket, "--sign-key", private)
	objects := bucketFiles(t, srv, "mirror", "site/")
	if _, ok := objects[layout.CatalogSignaturePath]; !ok {
		t.Fatalf("no %s in the bucket", layout.CatalogSignaturePath)
	}
	if out := mustRun(t, o, t.TempDir(), "verify", "--catalog-key", public, bucket); !strings.Contains(out, " 0 problems") {
		t.Errorf("verify --catalog-key %s:\n%s", bucket, out)
	}

	// A build that changes nothing makes no write request.
	proxy := startS3Counter(t, srv)
	counted := o
	counted.environ = proxy.environ(o.environ)
	mustRun(t, counted, dir, "build", "--out", bucket, "--sign-key", private)
	if w := proxy.takeWrites(); len(w) != 0 {
		t.Errorf("a no-op signed build wrote: %v", w)
	}

	// lock reads the hashes from the signed catalog: no archive is read.
	downloaded, _ := lockWith(t, counted, ExitOK, "--mirror", bucket)
	if n := proxy.takeArchiveReads(); n == 0 {
		t.Fatal("lock without --catalog-key read no archive: the count is wrong")
	}
	fast, _ := lockWith(t, counted, ExitOK, "--mirror", bucket, "--catalog-key", public)
	if n := proxy.takeArchiveReads(); n != 0 {
		t.Errorf("lock --catalog-key read %d archives", n)
	}
	if !bytes.Equal(fast, downloaded) {
		t.Errorf("lock --catalog-key wrote\n%s\nwant\n%s", fast, downloaded)
	}

	// One byte of an archive in the bucket.
	key := "site/registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"
	data := []byte(objects[strings.TrimPrefix(key, "site/")].data)
	data[len(data)/2] ^= 1
	putObject(t, srv, "mirror", key, data)
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, bucket)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "terraform-provider-foo_1.0.0_linux_amd64.zip: the signed catalog lists zh:") {
		t.Errorf("verify of a changed archive: exit %d\n%s%s", code, stdout, stderr)
	}
	noSecret(t, srv, stdout, stderr)
}

// A bundle carries the mirror, not its catalog's signature: the mirror it
// is imported into holds other providers too, so import signs the merged
// catalog with its own --sign-key.
func TestSignedCatalogThroughBundle(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	bundle := filepath.Join(t.TempDir(), "mirror.tar.gz")
	mustRun(t, o, dir, "bundle", "create", "site", "--out", bundle)

	signed := filepath.Join(t.TempDir(), "signed")
	mustRun(t, o, t.TempDir(), "bundle", "import", bundle, "--out", signed, "--sign-key", private)
	if out := mustRun(t, o, t.TempDir(), "verify", "--catalog-key", public, signed); !strings.Contains(out, " 0 problems") {
		t.Errorf("verify --catalog-key of the imported mirror:\n%s", out)
	}
	// The same catalog, but for the change records it pins: the import
	// signed its own record of what it added too.
	built, err := layout.DecodeCatalog(readFile(t, filepath.Join(dir, "site", layout.CatalogPath)))
	if err != nil {
		t.Fatal(err)
	}
	imported, err := layout.DecodeCatalog(readFile(t, filepath.Join(signed, layout.CatalogPath)))
	if err != nil {
		t.Fatal(err)
	}
	if len(imported.Changes) != len(built.Changes)+1 || !slices.Contains(imported.Changes, built.Changes[0]) {
		t.Errorf("the imported catalog pins %+v, want the built one's %+v and the import's record", imported.Changes, built.Changes)
	}
	built.Changes, imported.Changes = nil, nil
	if !reflect.DeepEqual(built, imported) {
		t.Error("the imported catalog differs from the one built")
	}

	unsigned := filepath.Join(t.TempDir(), "unsigned")
	mustRun(t, o, t.TempDir(), "bundle", "import", bundle, "--out", unsigned)
	if _, err := os.Stat(filepath.Join(unsigned, layout.CatalogSignaturePath)); !os.IsNotExist(err) {
		t.Errorf("an import without --sign-key left a signature (%v)", err)
	}
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, unsigned)
	if code != ExitVerification {
		t.Errorf("verify --catalog-key of an unsigned import: exit %d\n%s%s", code, stdout, stderr)
	}
}

// verify --catalog-key holds the change records to the same key: a record
// edited after it was signed (its digest in the index updated too, the
// old signature kept) is a problem, and so is one whose digest is not the
// index's.
func TestSignedChangeRecordsVerified(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	if out := mustRun(t, o, t.TempDir(), "verify", "--catalog-key", public, site); !strings.Contains(out, " 0 problems") {
		t.Fatalf("verify of the signed mirror:\n%s", out)
	}
	indexPath := filepath.Join(site, filepath.FromSlash(layout.ChangeIndexPath))
	index, err := layout.DecodeChangeIndex(readFile(t, indexPath))
	if err != nil || len(index.Records) != 1 || !index.Records[0].Signed {
		t.Fatalf("the change index: %+v (%v), want one signed record", index, err)
	}
	rec := filepath.Join(site, filepath.FromSlash(index.Records[0].Path))
	orig, origIndex := readFile(t, rec), readFile(t, indexPath)

	forged := bytes.Replace(orig, []byte("linux_amd64"), []byte("windows_amd64"), 1)
	sum := sha256.Sum256(forged)
	writeFile(t, rec, forged)
	newIndex := bytes.ReplaceAll(origIndex, []byte(index.Records[0].SHA256), []byte(hex.EncodeToString(sum[:])))
	if bytes.Equal(newIndex, origIndex) {
		t.Fatalf("the index does not hold the digest %s:\n%s", index.Records[0].SHA256, origIndex)
	}
	writeFile(t, indexPath, newIndex)
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
	if code != ExitVerification || !strings.Contains(stdout+stderr, index.Records[0].Path+".asc") {
		t.Errorf("verify of an edited signed record: exit %d, want %d naming its signature\n%s%s", code, ExitVerification, stdout, stderr)
	}

	writeFile(t, indexPath, origIndex) // the index's digest no longer the record's
	code, stdout, stderr = o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "the change index lists this record with SHA-256") {
		t.Errorf("verify of a record that is not the index's: exit %d, want %d\n%s%s", code, ExitVerification, stdout, stderr)
	}
}

// The signed catalog pins the change records the index listed when it was
// signed: history rewritten without the key (a record replaced by one of
// another name, listed as unsigned; a pinned record deleted) is a problem
// for verify --catalog-key, and a record listed after the signature is a
// warning that names it.
func TestSignedCatalogPinsChangeHistory(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	indexPath := filepath.Join(site, filepath.FromSlash(layout.ChangeIndexPath))
	origIndex := readFile(t, indexPath)
	index, err := layout.DecodeChangeIndex(origIndex)
	if err != nil || len(index.Records) != 1 {
		t.Fatalf("the change index: %+v (%v), want one record", index, err)
	}
	catalog, err := layout.DecodeCatalog(readFile(t, filepath.Join(site, layout.CatalogPath)))
	if err != nil {
		t.Fatal(err)
	}
	real := index.Records[0]
	if want := []layout.CatalogChange{{Path: real.Path, SHA256: real.SHA256}}; len(catalog.Changes) != 1 || catalog.Changes[0] != want[0] {
		t.Fatalf("catalog.json pins %+v, want %+v", catalog.Changes, want)
	}
	if out := mustRun(t, o, t.TempDir(), "verify", "--catalog-key", public, site); !strings.Contains(out, " 0 problems, 0 warnings") {
		t.Fatalf("verify of the signed mirror:\n%s", out)
	}

	// A forged record under its own content address, listed unsigned in
	// place of the real one.
	forge := func(text string) layout.ChangeEntry {
		rec := layout.ChangeRecord{Format: layout.ChangeFormat, Time: real.Time.Add(time.Minute), Tool: "tfmirror", Command: "tfmirror build",
			Added: []layout.ChangedPackage{{Package: "registry.opentofu.org/hashicorp/" + text, Version: "6.6.6", Platforms: []string{"linux_amd64"}}}}
		data, err := layout.EncodeChangeRecord(rec)
		if err != nil {
			t.Fatal(err)
		}
		e := layout.ChangeEntry{Path: layout.ChangePath(rec.Time, data), Time: rec.Time, SHA256: fmt.Sprintf("%x", sha256.Sum256(data)), Summary: "added " + text}
		writeFile(t, filepath.Join(site, filepath.FromSlash(e.Path)), data)
		return e
	}
	writeIndex := func(records ...layout.ChangeEntry) {
		idx := index
		idx.Records = records
		data, err := layout.Encode(idx)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, indexPath, data)
	}
	writeIndex(forge("evil"))
	code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
	if code != ExitVerification || !strings.Contains(stdout+stderr, "the change index no longer lists "+real.Path+", which the signed catalog pins") {
		t.Errorf("verify of a replaced history: exit %d, want %d naming the pinned record\n%s%s", code, ExitVerification, stdout, stderr)
	}

	// A record added to the index after the signature: not a problem,
	// but nothing vouches for it, and verify says which.
	injected := forge("later")
	writeIndex(injected, real)
	code, stdout, stderr = o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
	if code != ExitOK || !strings.Contains(stdout+stderr, "1 change record that the signed catalog.json does not pin") || !strings.Contains(stdout+stderr, injected.Path) {
		t.Errorf("verify with a record listed after the signature: exit %d, want 0 and a warning naming %s\n%s%s", code, injected.Path, stdout, stderr)
	}

	// A pinned record deleted, with its index entry.
	writeFile(t, indexPath, origIndex)
	if err := os.Remove(filepath.Join(site, filepath.FromSlash(real.Path))); err != nil {
		t.Fatal(err)
	}
	writeIndex()
	code, stdout, stderr = o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
	if code != ExitVerification || !strings.Contains(stdout+stderr, real.Path) || !strings.Contains(stdout+stderr, "the signed catalog pins this change record, but it is gone") {
		t.Errorf("verify of a deleted pinned record: exit %d, want %d\n%s%s", code, ExitVerification, stdout, stderr)
	}
}

// A release whose provenance record is kept but cannot be used (its
// SHA256SUMS deleted, the record itself garbled) is a problem for verify,
// not a release without provenance that only a warning mentions: its
// signature and its SBOMs would go unchecked.
func TestVerifyDamagedProvenanceRecord(t *testing.T) {
	o, dir, _, _ := signedOrigin(t)
	mustRun(t, o, dir, "build")
	site := filepath.Join(dir, "site")
	foo, v := addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0")
	for name, damage := range map[string]struct {
		rel  string
		data []byte
		want string
	}{
		"SHA256SUMS deleted": {layout.SumsPath(foo, v), nil, "is kept, but its SHA256SUMS is gone"},
		"provenance garbled": {layout.ProvenancePath(foo, v), []byte("garbage"), "the release's provenance record cannot be used"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(site, filepath.FromSlash(damage.rel))
			before := readFile(t, path)
			defer writeFile(t, path, before)
			if damage.data == nil {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, path, damage.data)
			}
			code, stdout, stderr := o.run(t, t.TempDir(), "verify", site)
			if code != ExitVerification || !strings.Contains(stdout+stderr, damage.want) {
				t.Errorf("verify: exit %d, want %d saying %q\n%s%s", code, ExitVerification, damage.want, stdout, stderr)
			}
		})
	}
}

// Files of a signed mirror replaced by what no writer leaves (a link, a
// file over its limit, a document that does not parse) are problems that
// verify --catalog-key names (exit 3), as they are without the key; it
// stopped at the first (exit 1).
func TestSignedMirrorTamperedFilesAreProblems(t *testing.T) {
	o, dir, private, public := signedOrigin(t)
	mustRun(t, o, dir, "build", "--sign-key", private)
	site := filepath.Join(dir, "site")
	foo := addrs.MustParseProvider("hashicorp/foo")
	elsewhere := t.TempDir()
	link := func(rel string) func() {
		path := filepath.Join(site, filepath.FromSlash(rel))
		moved := filepath.Join(elsewhere, filepath.Base(rel))
		if err := os.Rename(path, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, path); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(moved, path); err != nil {
				t.Fatal(err)
			}
		}
	}
	replace := func(rel string, data []byte, size int64) func() {
		path := filepath.Join(site, filepath.FromSlash(rel))
		before := readFile(t, path)
		writeFile(t, path, data)
		if size > 0 {
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
		}
		return func() { writeFile(t, path, before) }
	}
	for _, tt := range []struct {
		name   string
		damage func() func()
		where  string
	}{
		{"catalog.json a link", func() func() { return link(layout.CatalogPath) }, layout.CatalogPath},
		{"its signature a link", func() func() { return link(layout.CatalogSignaturePath) }, layout.CatalogSignaturePath},
		{"its signature 3 GB", func() func() { return replace(layout.CatalogSignaturePath, nil, 3<<30) }, layout.CatalogSignaturePath},
		{"a version document garbled", func() func() {
			return replace(layout.VersionPath(foo, addrs.MustParseVersion("1.0.0")), []byte("garbage"), 0)
		}, layout.VersionPath(foo, addrs.MustParseVersion("1.0.0"))},
		{"a provider's directory a link", func() func() { return link(path.Dir(layout.IndexPath(foo))) }, foo.String()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.damage()()
			code, stdout, stderr := o.run(t, t.TempDir(), "verify", "--catalog-key", public, site)
			if code != ExitVerification || !strings.Contains(stdout, "problem  "+tt.where) {
				t.Errorf("verify --catalog-key: exit %d, want %d with a problem at %s\n%s%s", code, ExitVerification, tt.where, stdout, stderr)
			}
		})
	}
}

// A release's key dates edited in its provenance are a problem for
// verify, in every release (the signed catalog keeps the dates of each
// key's newest release only): the kept key and signature say otherwise.
func TestVerifyEditedKeyDates(t *testing.T) {
	o, dir, _, _ := signedOrigin(t)
	mustRun(t, o, dir, "build")
	prov := filepath.Join(dir, "site", filepath.FromSlash(layout.ProvenancePath(addrs.MustParseProvider("hashicorp/foo"), addrs.MustParseVersion("1.0.0"))))
	before := readFile(t, prov)
	for field, want := range map[string]string{"key_created": "as made 2001-01-01T00:00:00Z", "key_expires": "as current until 2001-01-01T00:00:00Z"} {
		t.Run(field, func(t *testing.T) {
			defer writeFile(t, prov, before)
			edited := regexp.MustCompile(`"`+field+`": "[^"]*"`).ReplaceAll(before, []byte(`"`+field+`": "2001-01-01T00:00:00Z"`))
			if field == "key_expires" && bytes.Equal(edited, before) {
				edited = bytes.Replace(before, []byte(`"key_created"`), []byte(`"key_expires": "2001-01-01T00:00:00Z",
  "key_created"`), 1)
			}
			writeFile(t, prov, edited)
			code, stdout, stderr := o.run(t, t.TempDir(), "verify", filepath.Join(dir, "site"))
			if code != ExitVerification || !strings.Contains(stdout, want) {
				t.Errorf("verify with %s edited: exit %d, want %d saying %q\n%s%s", field, code, ExitVerification, want, stdout, stderr)
			}
		})
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

var threePlatforms = []string{"linux_amd64", "darwin_arm64", "windows_amd64"}

// pkgVersion is one provider version a test publishes and mirrors.
type pkgVersion struct {
	host, ns, typ, version string
	platforms              []string
	dirEntries             bool
}

func (p pkgVersion) addr() string { return p.host + "/" + p.ns + "/" + p.typ }
func (p pkgVersion) dir() string  { return p.host + "/" + p.ns + "/" + p.typ }
func (p pkgVersion) zip(plat string) string {
	return fmt.Sprintf("terraform-provider-%s_%s_%s.zip", p.typ, p.version, plat)
}

// fixture is a fake registry and a tfmirror build of it.
type fixture struct {
	ca   *testca.CA
	reg  *fakeregistry.Registry
	env  []string // SSL_CERT_FILE for every client
	work string   // working directory of tfmirror (holds mirror.hcl)
	site string   // <work>/site
	pkgs []pkgVersion
}

// mainFixturePackages is what TestBuildInstallsThroughNginx publishes.
var mainFixturePackages = []pkgVersion{
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.0.0", platforms: threePlatforms},
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.1.0", platforms: threePlatforms},
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "bar", version: "0.1.0", platforms: []string{"linux_amd64", "darwin_arm64"}, dirEntries: true},
	{host: "registry.test", ns: "acme", typ: "baz", version: "2.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
}

func mainManifest(servicesURL string) string {
	return fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/foo" {
  versions = ">= 1.0.0"
}

provider "hashicorp/bar" {
  versions  = "0.1.0"
  platforms = ["linux_amd64", "darwin_arm64"]
}

provider "registry.test/acme/baz" {
  versions  = "~> 2.0"
  platforms = ["linux_amd64", "darwin_arm64"]
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %[1]q }
}

host "registry.test" {
  services = { "providers.v1" = %[1]q }
}
`, servicesURL)
}

// newFixture starts a fake registry publishing pkgs and runs
// `tfmirror build --config mirror.hcl --out site` with the manifest that
// manifest returns for the registry's services URL; the build must succeed.
func newFixture(t *testing.T, pkgs []pkgVersion, manifest func(servicesURL string) string) *fixture {
	t.Helper()
	f := &fixture{ca: testca.New(t), pkgs: pkgs}
	f.reg = fakeregistry.New(t, f.ca)
	for _, p := range pkgs {
		f.reg.AddWithOptions(p.ns, p.typ, p.version, fakeregistry.Options{DirEntries: p.dirEntries}, p.platforms...)
	}
	f.env = caFileEnv(t, f.ca)
	f.work = t.TempDir()
	f.site = filepath.Join(f.work, "site")
	writeFile(t, filepath.Join(f.work, "mirror.hcl"), manifest(f.reg.ServicesURL))

	stdout, stderr, code := runTfmirror(t, f.work, f.env, "build", "--config", "mirror.hcl", "--out", "site")
	if code != 0 {
		t.Fatalf("tfmirror build: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return f
}

func (f *fixture) archive(t testing.TB, p pkgVersion, plat string) []byte {
	t.Helper()
	b := f.reg.Archive(p.ns, p.typ, p.version, plat)
	if b == nil {
		t.Fatalf("fake registry has no archive for %s %s %s", p.addr(), p.version, plat)
	}
	return b
}

func TestBuildInstallsThroughNginx(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	tofu := tofuBin(t)
	f := newFixture(t, mainFixturePackages, mainManifest)

	// --- the tree tfmirror wrote
	checkIndex(t, f.site, "registry.opentofu.org/hashicorp/foo",
		"{\n  \"versions\": {\n    \"1.0.0\": {},\n    \"1.1.0\": {}\n  }\n}")
	checkIndex(t, f.site, "registry.opentofu.org/hashicorp/bar",
		"{\n  \"versions\": {\n    \"0.1.0\": {}\n  }\n}")
	checkIndex(t, f.site, "registry.test/acme/baz",
		"{\n  \"versions\": {\n    \"2.0.0\": {}\n  }\n}")
	for _, p := range f.pkgs {
		checkVersionDoc(t, f, p)
	}
	checkTreeFiles(t, f)
	checkTreeModes(t, f.site)

	// --- nginx serves it with the content types clients require
	base := startNginx(t, f.site, f.ca)
	checkServed(t, f.ca, base+"registry.opentofu.org/hashicorp/foo/index.json", "application/json", nil)
	foo100 := f.pkgs[0]
	checkServed(t, f.ca, base+"registry.opentofu.org/hashicorp/foo/"+foo100.zip("linux_amd64"), "application/zip",
		f.archive(t, foo100, "linux_amd64"))

	mirrorOnly := mirrorOnlyCLI(base)

	// --- tofu init through the mirror only (no direct): foo 1.0.0, bar, baz
	t.Run("tofu init", func(t *testing.T) {
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.0.0"
    }
    bar = {
      source = "hashicorp/bar"
    }
    baz = {
      source = "registry.test/acme/baz"
    }
  }
}
`)
		want := map[string]pkgVersion{
			"registry.opentofu.org/hashicorp/foo": foo100,
			"registry.opentofu.org/hashicorp/bar": f.pkgs[2],
			"registry.test/acme/baz":              f.pkgs[3],
		}
		initThroughMirror(t, f, tofu, wd, mirrorOnly, plat, want)

		// foo's zip has no directory entries, so the h1 of the unpacked
		// package is also the h1 of the zip that the mirror lists.
		locks := parseLockFile(t, filepath.Join(wd, ".terraform.lock.hcl"))
		h1 := dirHashOfArchive(t, f.archive(t, foo100, plat))
		if !slices.Contains(locks["registry.opentofu.org/hashicorp/foo"], h1) {
			t.Errorf("lock file lacks %s for foo 1.0.0", h1)
		}
		doc := readVersionDoc(t, f.site, foo100)
		if !slices.Contains(doc.Archives[plat].Hashes, h1) {
			t.Errorf("site's foo 1.0.0.json %s hashes %q lack the lock file's %s", plat, doc.Archives[plat].Hashes, h1)
		}
	})

	// --- tofu >= 1.12 copies every platform's hashes with trust_all_hashes
	t.Run("tofu init trust_all_hashes", func(t *testing.T) {
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.0.0"
    }
  }
}
`)
		cli := fmt.Sprintf("provider_installation {\n  network_mirror {\n    url              = %q\n    trust_all_hashes = true\n  }\n}\n", base)
		initThroughMirror(t, f, tofu, wd, cli, plat, map[string]pkgVersion{"registry.opentofu.org/hashicorp/foo": foo100})

		hashes := parseLockFile(t, filepath.Join(wd, ".terraform.lock.hcl"))["registry.opentofu.org/hashicorp/foo"]
		if !slices.ContainsFunc(hashes, func(h string) bool { return strings.HasPrefix(h, "h1:") }) {
			t.Errorf("lock file for foo has no h1: hash: %q", hashes)
		}
		for _, pl := range foo100.platforms {
			zh := "zh:" + sha256Hex(f.archive(t, foo100, pl))
			if !slices.Contains(hashes, zh) {
				t.Errorf("lock file for foo 1.0.0 lacks %s's %s (trust_all_hashes): %q", pl, zh, hashes)
			}
		}
	})
}

// TestOldTofuInstallsThroughNginx checks that the oldest supported OpenTofu
// (1.10, no trust_all_hashes) installs from the same mirror.
func TestOldTofuInstallsThroughNginx(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	tofu := oldTofuBin(t)
	f := newFixture(t, mainFixturePackages, mainManifest)
	base := startNginx(t, f.site, f.ca)

	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "~> 1.0"
    }
    bar = {
      source = "hashicorp/bar"
    }
    baz = {
      source = "registry.test/acme/baz"
    }
  }
}
`)
	cli := mirrorOnlyCLI(base)
	initThroughMirror(t, f, tofu, wd, cli, plat, map[string]pkgVersion{
		"registry.opentofu.org/hashicorp/foo": f.pkgs[1], // newest 1.x
		"registry.opentofu.org/hashicorp/bar": f.pkgs[2],
		"registry.test/acme/baz":              f.pkgs[3],
	})
}

func TestTerraformInstallsThroughNginx(t *testing.T) {
	terraform := terraformBin(t)
	plat := requireMirroredHostPlatform(t)
	pkgs := []pkgVersion{
		{host: "registry.terraform.io", ns: "hashicorp", typ: "foo", version: "1.0.0", platforms: threePlatforms},
		{host: "registry.terraform.io", ns: "hashicorp", typ: "foo", version: "1.1.0", platforms: threePlatforms},
	}
	f := newFixture(t, pkgs, func(servicesURL string) string {
		return fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "registry.terraform.io/hashicorp/foo" {
  versions = ">= 1.0.0"
}

host "registry.terraform.io" {
  services = { "providers.v1" = %q }
}
`, servicesURL)
	})
	checkIndex(t, f.site, "registry.terraform.io/hashicorp/foo",
		"{\n  \"versions\": {\n    \"1.0.0\": {},\n    \"1.1.0\": {}\n  }\n}")
	base := startNginx(t, f.site, f.ca)

	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.1.0"
    }
  }
}
`)
	cli := mirrorOnlyCLI(base)
	initThroughMirror(t, f, terraform, wd, cli, plat, map[string]pkgVersion{"registry.terraform.io/hashicorp/foo": pkgs[1]})
}

// TestBuildRefusesTamperedPackages switches on one registry fault at a time
// and checks that a build into an existing, good site exits 3, names what
// failed, and leaves the site byte-identical.
//
// Two ways into the fault:
//   - rebuild: the same manifest again. The site already holds every archive,
//     so tfmirror re-checks them against the freshly fetched, signed
//     SHA256SUMS; a bad signature or a registry shasum that disagrees with
//     SHA256SUMS must fail. A tampered archive upstream need not be noticed
//     (the archive in the site still matches the signed SHA256SUMS, so it may
//     be kept without downloading), but the site must not change.
//   - new package: the site holds foo 1.0.0; the manifest then also asks for
//     1.1.0, for darwin_arm64 only, so exactly one package must be downloaded,
//     and it is the faulty one.
func TestBuildRefusesTamperedPackages(t *testing.T) {
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.Add("hashicorp", "foo", "1.0.0", threePlatforms...)
	reg.Add("hashicorp", "foo", "1.1.0", threePlatforms...)
	env := caFileEnv(t, ca)
	manifest := func(provider string) string {
		return fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

%s

host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, provider, reg.ServicesURL)
	}
	all := manifest(`provider "hashicorp/foo" {
  versions = ">= 1.0.0"
}`)
	scenarios := []struct {
		name          string
		first, second string
	}{
		{"rebuild", all, all},
		{"new package",
			manifest(`provider "hashicorp/foo" {
  versions = "1.0.0"
}`),
			manifest(`provider "hashicorp/foo" {
  versions  = ">= 1.0.0"
  platforms = ["darwin_arm64"]
}`)},
	}

	const faultPlatform = "darwin_arm64"
	faults := []struct {
		name     string
		fault    func()
		platform string // named in the error, for package faults
	}{
		{"tampered archive", func() { reg.TamperArchive("hashicorp", "foo", "1.1.0", faultPlatform) }, faultPlatform},
		{"bad signature", func() { reg.BadSignature("hashicorp", "foo", "1.1.0") }, ""},
		{"shasum mismatch", func() { reg.ShasumMismatch("hashicorp", "foo", "1.1.0", faultPlatform) }, faultPlatform},
	}
	for _, fc := range faults {
		for _, sc := range scenarios {
			t.Run(fc.name+"/"+sc.name, func(t *testing.T) {
				reg.Reset()
				defer reg.Reset()

				work := t.TempDir()
				site := filepath.Join(work, "site")
				writeFile(t, filepath.Join(work, "mirror.hcl"), sc.first)
				stdout, stderr, code := runTfmirror(t, work, env, "build", "--config", "mirror.hcl", "--out", "site")
				if code != 0 {
					t.Fatalf("clean build: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				before := treeHashes(t, site)
				if len(before) == 0 {
					t.Fatal("clean build wrote no files")
				}

				writeFile(t, filepath.Join(work, "mirror.hcl"), sc.second)
				fc.fault()
				stdout, stderr, code = runTfmirror(t, work, env, "build", "--config", "mirror.hcl", "--out", "site")
				out := stdout + stderr

				if diff := diffTrees(before, treeHashes(t, site)); diff != "" {
					t.Errorf("the build with %s changed the existing site:\n%s", fc.name, diff)
				}
				if sc.name == "rebuild" && code == 0 {
					// An incremental rebuild keeps the releases it verified
					// before without asking the origin again, so it never
					// sees the fault; the site must stay as it was (checked
					// above). The "new package" scenario must see it.
					return
				}
				if code != 3 {
					t.Errorf("build with %s: exit %d, want 3 (verification failure)\nstdout:\n%s\nstderr:\n%s",
						fc.name, code, stdout, stderr)
				}
				for _, want := range []string{"hashicorp/foo", "1.1.0"} {
					if !strings.Contains(out, want) {
						t.Errorf("output of the failed build does not mention %q:\n%s", want, out)
					}
				}
				if fc.platform != "" && !strings.Contains(out, fc.platform) &&
					!strings.Contains(out, strings.Replace(fc.platform, "_", "/", 1)) {
					t.Errorf("output of the failed build does not name the platform %s:\n%s", fc.platform, out)
				}
			})
		}
	}
}

// ---------------------------------------------------------------------------
// helpers

// requireMirroredHostPlatform returns this machine's platform, skipping the
// test when the fixtures do not publish it (tofu installs for the host only).
func requireMirroredHostPlatform(t *testing.T) string {
	t.Helper()
	plat := hostPlatform()
	if plat != "linux_amd64" && plat != "darwin_arm64" {
		t.Skipf("the fixtures publish linux_amd64 and darwin_arm64 only; this is %s", plat)
	}
	return plat
}

// initThroughMirror runs `init` in wd with cliConfig and checks that it
// succeeds without contacting the registry, and that the lock file holds
// exactly the providers in want, at their versions, each with the h1 of
// its unpacked package, which is also what was installed.
func initThroughMirror(t *testing.T, f *fixture, bin, wd, cliConfig, plat string, want map[string]pkgVersion) {
	t.Helper()
	before := len(f.reg.Requests())
	out, err := runTofu(t, bin, wd, cliConfig, f.env, "init", "-input=false")
	if err != nil {
		t.Fatalf("%s init: %v\n%s", filepath.Base(bin), err, out)
	}
	if reqs := f.reg.Requests(); len(reqs) != before {
		t.Errorf("the registry was contacted during init: %q", reqs[before:])
	}
	regHost := strings.TrimPrefix(f.reg.URL, "https://")
	for _, s := range []string{regHost, "/v1/providers/", ".well-known"} {
		if strings.Contains(out, s) {
			t.Errorf("init output mentions %q (registry contact?):\n%s", s, out)
		}
	}

	lockPath := filepath.Join(wd, ".terraform.lock.hcl")
	locks := parseLock(t, lockPath)
	var gotAddrs, wantAddrs []string
	for a := range locks {
		gotAddrs = append(gotAddrs, a)
	}
	for a := range want {
		wantAddrs = append(wantAddrs, a)
	}
	sort.Strings(gotAddrs)
	sort.Strings(wantAddrs)
	if !slices.Equal(gotAddrs, wantAddrs) {
		t.Errorf("lock file providers = %q, want %q", gotAddrs, wantAddrs)
	}
	for addr, p := range want {
		lock, ok := locks[addr]
		if !ok {
			continue
		}
		if lock.Version != p.version {
			t.Errorf("lock file: %s version %q, want %q", addr, lock.Version, p.version)
		}
		h1 := dirHashOfArchive(t, f.archive(t, p, plat))
		if !slices.Contains(lock.Hashes, h1) {
			t.Errorf("lock file: %s hashes %q lack %s, the h1 of the unpacked %s package", addr, lock.Hashes, h1, plat)
		}
		installed := filepath.Join(wd, ".terraform", "providers", filepath.FromSlash(addr), p.version, plat)
		// From an unpacked filesystem mirror tofu links the package in;
		// like tofu, hash what the link points at.
		if target, err := filepath.EvalSymlinks(installed); err == nil {
			installed = target
		}
		got, err := dirhash.HashDir(installed, "", dirhash.Hash1)
		if err != nil {
			t.Errorf("hashing the installed package: %v", err)
		} else if got != h1 {
			t.Errorf("installed %s has h1 %s, want %s", installed, got, h1)
		}
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dirHashOfArchive is the h1 of a package once unpacked: what tofu writes
// to the lock file for the platform it installed.
func dirHashOfArchive(t testing.TB, archive []byte) string {
	t.Helper()
	dir := t.TempDir()
	unzipTo(t, archive, dir)
	h, err := dirhash.HashDir(dir, "", dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// zipHashOfArchive is dirhash.HashZip of an archive: the h1 that matches the
// zip file itself.
func zipHashOfArchive(t testing.TB, archive []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "a.zip")
	if err := os.WriteFile(p, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := dirhash.HashZip(p, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// checkIndex checks the exact bytes of a provider's index.json.
func checkIndex(t testing.TB, site, providerDir, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(providerDir), "index.json"))
	if err != nil {
		t.Error(err)
		return
	}
	if string(got) != want {
		t.Errorf("%s/index.json =\n%q\nwant\n%q", providerDir, got, want)
	}
}

type versionDoc struct {
	Archives map[string]struct {
		Hashes []string `json:"hashes"`
		URL    string   `json:"url"`
	} `json:"archives"`
}

func readVersionDoc(t testing.TB, site string, p pkgVersion) versionDoc {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(p.dir()), p.version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc versionDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s/%s.json: %v", p.dir(), p.version, err)
	}
	return doc
}

// checkVersionDoc checks <version>.json of p: canonical bytes, exactly p's
// platforms, bare-filename URLs, sorted hashes with the zip's h1 and zh (and
// at most the unpacked h1 besides, for zips with directory entries); and
// that the archives are the registry's bytes.
func checkVersionDoc(t testing.TB, f *fixture, p pkgVersion) {
	t.Helper()
	name := p.dir() + "/" + p.version + ".json"
	raw, err := os.ReadFile(filepath.Join(f.site, filepath.FromSlash(p.dir()), p.version+".json"))
	if err != nil {
		t.Error(err)
		return
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	canonical, _ := json.MarshalIndent(generic, "", "  ")
	if !bytes.Equal(raw, canonical) {
		t.Errorf("%s is not json.MarshalIndent(v, \"\", \"  \") output (no trailing newline):\n%q\nwant\n%q", name, raw, canonical)
	}
	doc := readVersionDoc(t, f.site, p)

	var plats []string
	for pl := range doc.Archives {
		plats = append(plats, pl)
	}
	sort.Strings(plats)
	wantPlats := slices.Sorted(slices.Values(p.platforms))
	if !slices.Equal(plats, wantPlats) {
		t.Errorf("%s platforms = %q, want %q", name, plats, wantPlats)
	}

	for _, pl := range p.platforms {
		entry, ok := doc.Archives[pl]
		if !ok {
			continue
		}
		archive := f.archive(t, p, pl)
		if entry.URL != p.zip(pl) {
			t.Errorf("%s %s url = %q, want %q", name, pl, entry.URL, p.zip(pl))
		}
		if !slices.IsSorted(entry.Hashes) || len(slices.Compact(slices.Clone(entry.Hashes))) != len(entry.Hashes) {
			t.Errorf("%s %s hashes not sorted and unique: %q", name, pl, entry.Hashes)
		}
		zh := "zh:" + sha256Hex(archive)
		zipH1 := zipHashOfArchive(t, archive)
		dirH1 := dirHashOfArchive(t, archive)
		if !p.dirEntries && zipH1 != dirH1 {
			t.Fatalf("fixture: %s %s has no directory entries but HashZip %s != HashDir %s", p.addr(), pl, zipH1, dirH1)
		}
		for _, h := range []string{zipH1, zh} {
			if !slices.Contains(entry.Hashes, h) {
				t.Errorf("%s %s hashes %q lack %s", name, pl, entry.Hashes, h)
			}
		}
		for _, h := range entry.Hashes {
			if h != zipH1 && h != zh && h != dirH1 {
				t.Errorf("%s %s has unexpected hash %q (want only %s, %s and possibly %s)", name, pl, h, zipH1, zh, dirH1)
			}
		}

		got, err := os.ReadFile(filepath.Join(f.site, filepath.FromSlash(p.dir()), p.zip(pl)))
		if err != nil {
			t.Error(err)
		} else if !bytes.Equal(got, archive) {
			t.Errorf("%s/%s differs from the registry's archive", p.dir(), p.zip(pl))
		}
	}
}

// checkTreeFiles checks that the site holds exactly the expected files.
func checkTreeFiles(t testing.TB, f *fixture) {
	t.Helper()
	want := map[string]bool{"catalog.json": true, "index.html": true}
	for _, p := range f.pkgs {
		want[p.dir()+"/index.json"] = true
		want[p.dir()+"/"+p.version+".json"] = true
		for _, pl := range p.platforms {
			want[p.dir()+"/"+p.zip(pl)] = true
			want[p.dir()+"/"+strings.TrimSuffix(p.zip(pl), ".zip")+".cdx.json"] = true // its SBOM
		}
		// Provenance kept next to the archives: upstream SHA256SUMS and its
		// signature byte for byte, and the provenance record.
		prefix := fmt.Sprintf("%s/terraform-provider-%s_%s_", p.dir(), p.typ, p.version)
		for _, name := range []string{"SHA256SUMS", "SHA256SUMS.sig", "provenance.json"} {
			want[prefix+name] = true
		}
		kept, err := os.ReadFile(filepath.Join(f.site, filepath.FromSlash(prefix+"SHA256SUMS")))
		if err != nil || !bytes.Equal(kept, f.reg.SHA256SUMS(p.ns, p.typ, p.version)) {
			t.Errorf("kept SHA256SUMS of %s %s differs from upstream (%v)", p.addr(), p.version, err)
		}
	}
	got := treeHashes(t, f.site)
	for name := range got {
		if !want[name] {
			t.Errorf("unexpected file in the site: %s", name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("missing file in the site: %s", name)
		}
	}
}

// checkTreeModes checks that the site is world-readable as published:
// files 0644, directories 0755.
func checkTreeModes(t testing.TB, site string) {
	t.Helper()
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(site, p)
		switch {
		case d.IsDir():
			if info.Mode().Perm() != 0o755 {
				t.Errorf("directory %s has mode %04o, want 0755", rel, info.Mode().Perm())
			}
		case info.Mode().IsRegular():
			if info.Mode().Perm() != 0o644 {
				t.Errorf("file %s has mode %04o, want 0644", rel, info.Mode().Perm())
			}
		default:
			t.Errorf("%s is not a regular file or directory (%v)", rel, info.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkServed GETs url and checks status 200, the Content-Type and, if
// body is not nil, the body.
func checkServed(t testing.TB, ca *testca.CA, url, contentType string, body []byte) {
	t.Helper()
	resp, err := ca.Client().Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, got)
	}
	if ct := resp.Header.Get("Content-Type"); ct != contentType {
		t.Errorf("GET %s: Content-Type %q, want %q", url, ct, contentType)
	}
	if body != nil && !bytes.Equal(got, body) {
		t.Errorf("GET %s: body differs from the expected %d bytes", url, len(body))
	}
}

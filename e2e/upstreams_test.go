package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// The upstream tests build mirrors whose providers come from the
// manifest's provider_installation block instead of the origin registries:
// a network mirror tfmirror built (its kept SHA256SUMS and signature
// verify the origin's signature end to end), a network mirror made by
// another tool (`tofu providers mirror`: hashes only), packed and unpacked
// filesystem mirrors (hashes only, Unicode host directories) and an OCI
// registry tfmirror filled. Each result is served by nginx and installed
// by real tofu through a network mirror only.

// upstreamPlatforms are the platforms every upstream package has.
var upstreamPlatforms = []string{"linux_amd64", "darwin_arm64"}

// upstreamPackages: two ASCII hosts and an internationalized one, all
// served by one fake origin through host blocks.
var upstreamPackages = []pkgVersion{
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.0.0", platforms: upstreamPlatforms},
	{host: "registry.test", ns: "acme", typ: "baz", version: "2.0.0", platforms: upstreamPlatforms},
	{host: unpackedIDNHost, ns: "acme", typ: "idn", version: "1.0.0", platforms: upstreamPlatforms},
}

// asciiUpstreamPackages leaves out the internationalized host: `tofu
// providers mirror` names its directory in Unicode, which no network
// mirror client asks for (notes: tofu-internals §6), and the OCI tests
// keep to ASCII repository names.
var asciiUpstreamPackages = upstreamPackages[:2]

// hashesOnlyWarning is what a build says of a release an upstream vouches
// for with hashes alone.
const hashesOnlyWarning = "keeps no signature, so only its hashes vouch for the packages"

// newUpstreamOrigin starts a fake origin publishing pkgs; nothing is built.
func newUpstreamOrigin(t *testing.T, pkgs []pkgVersion) *fixture {
	t.Helper()
	f := &fixture{ca: testca.New(t), pkgs: pkgs}
	f.reg = fakeregistry.New(t, f.ca)
	for _, p := range pkgs {
		f.reg.Add(p.ns, p.typ, p.version, p.platforms...)
	}
	f.env = caFileEnv(t, f.ca)
	f.work = t.TempDir()
	f.site = filepath.Join(f.work, "site")
	return f
}

// upstreamHosts is a host block for every host of pkgs pointing at the
// origin: valid in a manifest and in a tofu CLI configuration alike.
func upstreamHosts(servicesURL string, pkgs []pkgVersion) string {
	return hostBlocks(pkgs, func(pkgVersion) string { return servicesURL })
}

// hostBlocks is a host block for every host of pkgs, whose providers.v1
// service is at servicesURL(a package of that host).
func hostBlocks(pkgs []pkgVersion, servicesURL func(pkgVersion) string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, p := range pkgs {
		if !seen[p.host] {
			seen[p.host] = true
			fmt.Fprintf(&b, "host %q {\n  services = { \"providers.v1\" = %q }\n}\n\n", p.host, servicesURL(p))
		}
	}
	return b.String()
}

// upstreamManifest asks for exactly pkgs on upstreamPlatforms; rest is
// appended (host blocks, a provider_installation block).
func upstreamManifest(pkgs []pkgVersion, rest string) string {
	var b strings.Builder
	b.WriteString("platforms = [\"linux_amd64\", \"darwin_arm64\"]\n\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "provider %q {\n  versions = %q\n}\n\n", p.addr(), p.version)
	}
	b.WriteString(rest)
	return b.String()
}

// upstreamMainTF requires exactly pkgs.
func upstreamMainTF(pkgs []pkgVersion) string {
	var b strings.Builder
	b.WriteString("terraform {\n  required_providers {\n")
	for _, p := range pkgs {
		fmt.Fprintf(&b, "    %s = {\n      source  = %q\n      version = %q\n    }\n", p.typ, p.addr(), p.version)
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// buildFromUpstream writes upstream.hcl in f.work (pkgs and the given
// provider_installation block, no host block: the origin is out of reach)
// and runs `tfmirror build --config upstream.hcl --out out` with extra.
func buildFromUpstream(t *testing.T, f *fixture, env []string, pkgs []pkgVersion, installation, out string, extra ...string) (stdout, stderr string, code int) {
	t.Helper()
	writeFile(t, filepath.Join(f.work, "upstream.hcl"), upstreamManifest(pkgs, installation))
	args := append([]string{"build", "--config", "upstream.hcl", "--out", out}, extra...)
	return runTfmirror(t, f.work, env, args...)
}

// installFromSite serves site with nginx and has tofu 1.12 install pkgs
// through a network mirror only: the origin is not contacted and the lock
// file holds each package's h1: (initThroughMirror). It returns tofu's
// working directory.
func installFromSite(t *testing.T, f *fixture, site string, pkgs []pkgVersion) string {
	t.Helper()
	plat := requireMirroredHostPlatform(t)
	base := startNginx(t, site, f.ca)
	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), upstreamMainTF(pkgs))
	want := map[string]pkgVersion{}
	for _, p := range pkgs {
		want[p.addr()] = p
	}
	initThroughMirror(t, f, tofuBin(t), wd, mirrorOnlyCLI(base), plat, want)
	// The provider stays executable, or tofu could not run it.
	for _, p := range pkgs {
		exe := filepath.Join(wd, ".terraform", "providers", filepath.FromSlash(p.addr()), p.version, plat, "terraform-provider-"+p.typ+"_v"+p.version)
		if info, err := os.Stat(exe); err != nil {
			t.Errorf("the installed provider: %v", err)
		} else if info.Mode().Perm()&0o111 == 0 {
			t.Errorf("tofu installed %s with mode %04o: not executable", exe, info.Mode().Perm())
		}
	}
	return wd
}

// networkDir is a provider's directory in a network mirror: the host in
// its ASCII form, as clients ask for it.
func networkDir(p pkgVersion) string {
	host := p.host
	if host == unpackedIDNHost {
		host = unpackedIDNPunycode
	}
	return host + "/" + p.ns + "/" + p.typ
}

// keptFile is the path of a file kept next to a release's archives in a
// network mirror: "SHA256SUMS", "SHA256SUMS.sig" or "provenance.json".
func keptFile(p pkgVersion, name string) string {
	return fmt.Sprintf("%s/terraform-provider-%s_%s_%s", networkDir(p), p.typ, p.version, name)
}

// keptProvenance is what the tests read of a kept provenance record,
// decoded here rather than with the code under test.
type keptProvenance struct {
	KeyID      string `json:"key_id"`
	HashesOnly string `json:"hashes_only"`
	Archives   map[string]struct {
		H1 string `json:"h1"`
	} `json:"archives"`
}

func readKeptProvenance(t *testing.T, site string, p pkgVersion) keptProvenance {
	t.Helper()
	var prov keptProvenance
	data := mustRead(t, filepath.Join(site, filepath.FromSlash(keptFile(p, "provenance.json"))))
	if err := json.Unmarshal(data, &prov); err != nil {
		t.Fatalf("%s %s: provenance: %v\n%s", p.addr(), p.version, err, data)
	}
	return prov
}

// checkNoOriginContact fails the test if the origin served anything since
// before requests.
func checkNoOriginContact(t *testing.T, f *fixture, before int, what string) {
	t.Helper()
	if reqs := f.reg.Requests(); len(reqs) != before {
		t.Errorf("%s contacted the origin: %q", what, reqs[before:])
	}
}

// verifyRequiringSignatures runs `tfmirror verify --json
// --require-signatures site` and returns its exit code and report.
func verifyRequiringSignatures(t *testing.T, f *fixture, site string) (int, verifyResult) {
	t.Helper()
	stdout, stderr, code := runTfmirror(t, f.work, f.env, "verify", "--json", "--require-signatures", site)
	var res verifyResult
	if err := json.Unmarshal(summaryOf(stdout), &res); err != nil {
		t.Fatalf("tfmirror verify --json: exit %d, output is not JSON (%v):\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	return code, res
}

// publishedFiles lists what a client could fetch of packages below out:
// every file in a provider's directory (the .tfmirror directory and the
// catalog pages at the top are not).
func publishedFiles(t *testing.T, out string) []string {
	t.Helper()
	if _, err := os.Stat(out); os.IsNotExist(err) {
		return nil
	}
	var files []string
	for rel := range treeHashes(t, out) {
		if strings.Contains(rel, "/") {
			files = append(files, rel)
		}
	}
	slices.Sort(files)
	return files
}

// tofuProvidersMirror runs `tofu providers mirror` for pkgs against the
// fake origin (host blocks only) into dir: a packed filesystem mirror with
// index.json and <version>.json beside the zips, as another tool makes
// it, whose documents list hashes (tofu 1.12 lists the zh: of each zip)
// and which keeps no SHA256SUMS or signature. It is made world-readable
// for nginx.
func tofuProvidersMirror(t *testing.T, f *fixture, pkgs []pkgVersion, dir string) {
	t.Helper()
	wd := t.TempDir()
	writeFile(t, filepath.Join(wd, "main.tf"), upstreamMainTF(pkgs))
	// -no-color after "mirror": runTofu would put it after "providers".
	args := []string{"providers", "mirror", "-no-color"}
	for _, p := range upstreamPlatforms {
		args = append(args, "-platform="+p)
	}
	args = append(args, dir)
	if out, err := runTofu(t, tofuBin(t), wd, upstreamHosts(f.reg.ServicesURL, pkgs), f.env, args...); err != nil {
		t.Fatalf("tofu providers mirror: %v\n%s", err, out)
	}
	for _, p := range pkgs {
		// Unicode host directories, as tofu writes them.
		for _, pl := range p.platforms {
			got := mustRead(t, filepath.Join(dir, filepath.FromSlash(p.dir()), p.zip(pl)))
			if !bytes.Equal(got, f.archive(t, p, pl)) {
				t.Fatalf("tofu providers mirror wrote %s %s other bytes than the origin's", p.addr(), pl)
			}
		}
	}
	for rel := range treeHashes(t, dir) {
		if strings.Contains(rel, "SHA256SUMS") || strings.HasSuffix(rel, "provenance.json") {
			t.Fatalf("tofu providers mirror kept %s: the mirror is meant to hold hashes only", rel)
		}
	}
	makeWorldReadable(t, dir)
}

// makeWorldReadable adds read permission for everyone below dir (and
// search permission on directories and executables), keeping other bits.
func makeWorldReadable(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() | 0o444
		if d.IsDir() || mode&0o100 != 0 {
			mode |= 0o111
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// unpackMirror writes the unpacked filesystem mirror of the packed one:
// each package's zip extracted into HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/
// (Unicode host directories, as OpenTofu reads them), with the modes of
// its entries, so the provider executable stays executable.
func unpackMirror(t *testing.T, packed, unpacked string, pkgs []pkgVersion) {
	t.Helper()
	for _, p := range pkgs {
		for _, pl := range p.platforms {
			dir := filepath.Join(unpacked, filepath.FromSlash(p.dir()), p.version, pl)
			unzipTo(t, mustRead(t, filepath.Join(packed, filepath.FromSlash(p.dir()), p.zip(pl))), dir)
			exe := filepath.Join(dir, "terraform-provider-"+p.typ+"_v"+p.version)
			if info, err := os.Stat(exe); err != nil || info.Mode().Perm()&0o111 == 0 {
				t.Fatalf("%s %s: the unpacked provider executable %s is missing or not executable (%v)", p.addr(), pl, exe, err)
			}
		}
	}
	makeWorldReadable(t, unpacked)
}

// tamper changes the file at path by change and returns a function that
// puts the original bytes back.
func tamper(t *testing.T, path string, change func([]byte)) (restore func()) {
	t.Helper()
	orig := mustRead(t, path)
	data := bytes.Clone(orig)
	change(data)
	if bytes.Equal(data, orig) {
		t.Fatalf("tampering with %s changed nothing", path)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// flipMiddleByte flips every bit of the middle byte.
func flipMiddleByte(data []byte) { data[len(data)/2] ^= 0xff }

// checkOriginSignatureKept checks that site keeps, for every package of
// pkgs, the origin's SHA256SUMS and signature byte for byte and a
// provenance naming the origin's key and no hashes-only upstream.
func checkOriginSignatureKept(t *testing.T, f *fixture, site string, pkgs []pkgVersion) {
	t.Helper()
	for _, p := range pkgs {
		prov := readKeptProvenance(t, site, p)
		if prov.KeyID != f.reg.KeyID || prov.HashesOnly != "" {
			t.Errorf("%s %s: provenance key_id %q, hashes_only %q; want the origin's key %s and no hashes-only upstream",
				p.addr(), p.version, prov.KeyID, prov.HashesOnly, f.reg.KeyID)
		}
		if got := mustRead(t, filepath.Join(site, filepath.FromSlash(keptFile(p, "SHA256SUMS")))); !bytes.Equal(got, f.reg.SHA256SUMS(p.ns, p.typ, p.version)) {
			t.Errorf("%s %s: the kept SHA256SUMS is not the origin's", p.addr(), p.version)
		}
		sig := fetchOrigin(t, f, fakeregistry.SignaturePath(p.ns, p.typ, p.version))
		if got := mustRead(t, filepath.Join(site, filepath.FromSlash(keptFile(p, "SHA256SUMS.sig")))); !bytes.Equal(got, sig) {
			t.Errorf("%s %s: the kept signature is not the origin's", p.addr(), p.version)
		}
	}
}

// TestUpstreamChainKeepsOriginSignature builds the chain origin → A → B:
// A from the origin, B from A served by nginx as a network_mirror
// upstream. B keeps the origin's SHA256SUMS, signature and key (verify
// --require-signatures passes), the build of B never contacts the origin
// and says nothing of hashes only, and tofu installs every provider
// (the internationalized host included) from B with the origin's h1:.
func TestUpstreamChainKeepsOriginSignature(t *testing.T) {
	requireMirroredHostPlatform(t)
	pkgs := upstreamPackages
	f := newFixture(t, pkgs, func(servicesURL string) string {
		return upstreamManifest(pkgs, upstreamHosts(servicesURL, pkgs))
	})
	baseA := startNginx(t, f.site, f.ca)

	before := len(f.reg.Requests())
	stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, mirrorOnlyCLI(baseA), "site-b")
	if code != 0 {
		t.Fatalf("build B from A: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkNoOriginContact(t, f, before, "the build of B")
	if !strings.Contains(stdout, "6 mirrored") || !strings.Contains(stdout, "signed by "+f.reg.KeyID) {
		t.Errorf("the build of B does not report 6 packages signed by the origin's key %s:\n%s", f.reg.KeyID, stdout)
	}
	if strings.Contains(stdout+stderr, hashesOnlyWarning) {
		t.Errorf("the build of B from a signed mirror warns of hashes only:\n%s%s", stdout, stderr)
	}

	siteB := filepath.Join(f.work, "site-b")
	checkOriginSignatureKept(t, f, siteB, pkgs)
	if code, res := verifyRequiringSignatures(t, f, siteB); code != 0 || len(res.Problems) > 0 || len(res.Warnings) > 0 {
		t.Errorf("verify --require-signatures B: exit %d, %d problems, %d warnings; want 0, none, none: %+v",
			code, len(res.Problems), len(res.Warnings), res)
	} else if res.Versions != 3 || res.Archives != 6 {
		t.Errorf("verify of B counted %d versions and %d archives; want 3 and 6", res.Versions, res.Archives)
	}
	// B holds A's archives, which are the origin's.
	for _, p := range pkgs {
		for _, pl := range p.platforms {
			got := mustRead(t, filepath.Join(siteB, filepath.FromSlash(networkDir(p)), p.zip(pl)))
			if !bytes.Equal(got, f.archive(t, p, pl)) {
				t.Errorf("B's %s %s archive is not the origin's", p.addr(), pl)
			}
		}
	}

	installFromSite(t, f, siteB, pkgs)
}

// TestUpstreamNetworkMirrorOfAnotherTool builds from a network mirror that
// `tofu providers mirror` made (index.json and <version>.json listing zh:
// hashes, no SHA256SUMS, no signature), served by nginx, and from a copy
// whose documents list h1: hashes only (as older clients and other tools
// write them, so no digest is known before the download): each build
// succeeds, warns that only hashes vouch, records hashes_only and a
// SHA256SUMS of the archives' digests, and tofu installs from the result;
// --require-signatures refuses with exit 3 and publishes nothing, and
// verify --require-signatures refuses the result too; a tampered archive
// in the upstream is refused with exit 3.
func TestUpstreamNetworkMirrorOfAnotherTool(t *testing.T) {
	requireMirroredHostPlatform(t)
	pkgs := asciiUpstreamPackages
	f := newUpstreamOrigin(t, pkgs)
	plain := filepath.Join(f.work, "plain")
	tofuProvidersMirror(t, f, pkgs, plain)
	h1Only := filepath.Join(f.work, "h1-only")
	copyTree(t, plain, h1Only)
	relistHashes(t, h1Only, pkgs, func(p pkgVersion, plat string) []string {
		return []string{zipHashOfArchive(t, f.archive(t, p, plat))}
	})

	for _, upstream := range []struct{ name, dir, listed string }{
		{"zh listed", plain, "zh:"},
		{"h1 listed", h1Only, "h1:"},
	} {
		t.Run(upstream.name, func(t *testing.T) {
			doc := string(mustRead(t, filepath.Join(upstream.dir, filepath.FromSlash(pkgs[0].dir()), pkgs[0].version+".json")))
			if !strings.Contains(doc, `"`+upstream.listed) {
				t.Fatalf("the upstream's %s %s.json lists no %s hash:\n%s", pkgs[0].addr(), pkgs[0].version, upstream.listed, doc)
			}
			base := startNginx(t, upstream.dir, f.ca)
			installation := mirrorOnlyCLI(base)
			upstreamName := "network_mirror " + base
			work := t.TempDir()

			t.Run("require signatures", func(t *testing.T) {
				out := filepath.Join(work, "strict")
				before := len(f.reg.Requests())
				stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, installation, out, "--json", "--require-signatures")
				if code != 3 {
					t.Fatalf("build --require-signatures from a mirror of hashes only: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				checkNoOriginContact(t, f, before, "the build")
				if files := publishedFiles(t, out); len(files) > 0 {
					t.Errorf("the refused build published %q", files)
				}
				var summary struct {
					Event  string `json:"event"`
					Counts *struct {
						Mirrored, Failed int
					} `json:"counts"`
					Errors   []string `json:"errors"`
					ExitCode *int     `json:"exit_code"`
				}
				for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
					if strings.Contains(line, `"event":"summary"`) {
						if err := json.Unmarshal([]byte(line), &summary); err != nil {
							t.Fatalf("summary line: %v\n%s", err, line)
						}
					}
				}
				if summary.Counts == nil || summary.ExitCode == nil {
					t.Fatalf("no JSON summary with counts and exit code:\n%s", stdout)
				}
				if summary.Counts.Mirrored != 0 || summary.Counts.Failed != 4 || *summary.ExitCode != 3 {
					t.Errorf("summary: %d mirrored, %d failed, exit %d; want 0, 4, 3", summary.Counts.Mirrored, summary.Counts.Failed, *summary.ExitCode)
				}
				if !slices.ContainsFunc(summary.Errors, func(e string) bool { return strings.Contains(e, upstreamName+" vouches for it with hashes only") }) {
					t.Errorf("the summary's errors do not say that %s vouches with hashes only: %q", upstreamName, summary.Errors)
				}
			})

			t.Run("build and install", func(t *testing.T) {
				site := filepath.Join(work, "site")
				before := len(f.reg.Requests())
				stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, installation, site)
				if code != 0 {
					t.Fatalf("build from a mirror of hashes only: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				checkHashesOnlyBuild(t, f, before, stdout+stderr, upstreamName, site, pkgs)
				for _, p := range pkgs {
					sums := string(mustRead(t, filepath.Join(site, filepath.FromSlash(keptFile(p, "SHA256SUMS")))))
					for _, pl := range p.platforms {
						if line := sha256Hex(f.archive(t, p, pl)) + "  " + p.zip(pl); !strings.Contains(sums, line) {
							t.Errorf("%s %s: the kept SHA256SUMS lacks %q:\n%s", p.addr(), p.version, line, sums)
						}
					}
					if _, err := os.Stat(filepath.Join(site, filepath.FromSlash(keptFile(p, "SHA256SUMS.sig")))); !os.IsNotExist(err) {
						t.Errorf("%s %s: a signature is kept for a release of hashes only (%v)", p.addr(), p.version, err)
					}
				}
				// The verdict carries along: what only hashes vouched for
				// is no more than that in the mirror built from it.
				if code, res := verifyRequiringSignatures(t, f, site); code != 3 || len(res.Problems) == 0 {
					t.Errorf("verify --require-signatures of a mirror of hashes only: exit %d, %d problems; want 3 and problems", code, len(res.Problems))
				}
				installFromSite(t, f, site, pkgs)
			})

			// A corrupted archive, and a valid archive of another package
			// under foo's name (refused by its zh:, or by its h1: once
			// downloaded when only h1: is listed).
			foo := pkgs[0]
			const plat = "linux_amd64"
			other := f.archive(t, foo, "darwin_arm64")
			if len(other) != len(f.archive(t, foo, plat)) {
				t.Fatalf("the fixture's archives of %s differ in length; the swap below needs equal lengths", foo.addr())
			}
			for _, tc := range []struct {
				name   string
				change func([]byte)
			}{
				{"corrupted archive", flipMiddleByte},
				{"archive of another package", func(b []byte) { copy(b, other) }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					archive := filepath.Join(upstream.dir, filepath.FromSlash(foo.dir()), foo.zip(plat))
					defer tamper(t, archive, tc.change)()
					out := filepath.Join(work, "tampered")
					stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, installation, out)
					if code != 3 {
						t.Fatalf("build from a mirror serving a tampered archive: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
					}
					checkRefusedPackage(t, stdout+stderr, out, foo, plat)
				})
			}
		})
	}
}

// relistHashes rewrites the <version>.json of every package of pkgs in
// the network mirror at dir so that each platform lists hashes(p, plat).
func relistHashes(t *testing.T, dir string, pkgs []pkgVersion, hashes func(p pkgVersion, plat string) []string) {
	t.Helper()
	for _, p := range pkgs {
		path := filepath.Join(dir, filepath.FromSlash(p.dir()), p.version+".json")
		var doc struct {
			Archives map[string]struct {
				Hashes []string `json:"hashes"`
				URL    string   `json:"url"`
			} `json:"archives"`
		}
		if err := json.Unmarshal(mustRead(t, path), &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for plat, a := range doc.Archives {
			a.Hashes = hashes(p, plat)
			doc.Archives[plat] = a
		}
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, string(data))
	}
}

// checkRefusedPackage checks that a failed build names the package and
// published nothing of it into out: not its archive, and no version
// document listing its platform.
func checkRefusedPackage(t *testing.T, output, out string, p pkgVersion, plat string) {
	t.Helper()
	for _, want := range []string{p.addr(), p.version} {
		if !strings.Contains(output, want) {
			t.Errorf("the output of the failed build does not mention %q:\n%s", want, output)
		}
	}
	if !strings.Contains(output, plat) && !strings.Contains(output, strings.Replace(plat, "_", "/", 1)) {
		t.Errorf("the output of the failed build does not name the platform %s:\n%s", plat, output)
	}
	files := publishedFiles(t, out)
	t.Logf("published despite the refusal: %q", files)
	if slices.Contains(files, networkDir(p)+"/"+p.zip(plat)) {
		t.Errorf("the refused archive %s was published", p.zip(plat))
	}
	doc := networkDir(p) + "/" + p.version + ".json"
	if slices.Contains(files, doc) {
		var v versionDoc
		if err := json.Unmarshal(mustRead(t, filepath.Join(out, filepath.FromSlash(doc))), &v); err != nil {
			t.Fatal(err)
		}
		if _, ok := v.Archives[plat]; ok {
			t.Errorf("%s lists the refused package %s", doc, plat)
		}
	}
}

// checkReleaseRefused checks that a failed build's output names every
// platform of release p and that nothing of p's provider was published
// below out.
func checkReleaseRefused(t *testing.T, output, out string, p pkgVersion) {
	t.Helper()
	for _, pl := range p.platforms {
		checkRefusedPackage(t, output, out, p, pl)
	}
	for _, file := range publishedFiles(t, out) {
		if strings.HasPrefix(file, networkDir(p)+"/") {
			t.Errorf("%s was published from a release whose signature does not verify", file)
		}
	}
}

// TestUpstreamFilesystemMirrors builds from a packed filesystem mirror
// (the directory `tofu providers mirror` wrote) and from an unpacked one
// (its zips extracted with their modes), each with a provider on an
// internationalized host in a Unicode directory: the build warns that
// only hashes vouch and records hashes_only naming the directory, the
// origin is never contacted, and tofu installs from the result through
// nginx with, in its lock file, the h1: of the unpacked package.
func TestUpstreamFilesystemMirrors(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	pkgs := upstreamPackages
	f := newUpstreamOrigin(t, pkgs)
	packed := filepath.Join(f.work, "packed")
	tofuProvidersMirror(t, f, pkgs, packed)
	unpacked := filepath.Join(f.work, "unpacked")
	unpackMirror(t, packed, unpacked, pkgs)

	for _, kind := range []struct{ name, dir string }{{"packed", packed}, {"unpacked", unpacked}} {
		t.Run(kind.name, func(t *testing.T) {
			installation := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", kind.dir)
			upstreamName := "filesystem_mirror " + kind.dir
			out := filepath.Join(f.work, "from-"+kind.name)
			before := len(f.reg.Requests())
			stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, installation, out)
			if code != 0 {
				t.Fatalf("build from the %s filesystem mirror: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", kind.name, code, stdout, stderr)
			}
			if !strings.Contains(stdout, "6 mirrored") {
				t.Errorf("the build does not report 6 packages mirrored:\n%s", stdout)
			}
			checkHashesOnlyBuild(t, f, before, stdout+stderr, upstreamName, out, pkgs)

			wd := installFromSite(t, f, out, pkgs)
			locks := parseLockFile(t, filepath.Join(wd, ".terraform.lock.hcl"))
			for _, p := range pkgs {
				h1, err := dirhash.HashDir(filepath.Join(unpacked, filepath.FromSlash(p.dir()), p.version, plat), "", dirhash.Hash1)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(locks[p.addr()], h1) {
					t.Errorf("lock file: %s hashes %q lack %s, the h1 of the unpacked package", p.addr(), locks[p.addr()], h1)
				}
				if got := readKeptProvenance(t, out, p).Archives[plat].H1; got != h1 {
					t.Errorf("%s %s: the provenance records h1 %q for %s, want %s, the h1 of the unpacked package", p.addr(), p.version, got, plat, h1)
				}
			}
		})
	}
}

// TestUpstreamOCIRegistry fills a real OCI registry from the origin with
// `tfmirror build --out oci://...`, then builds directories with an
// oci_mirror upstream of that registry: the origin is not contacted, each
// directory keeps the origin's SHA256SUMS, signature and key (verify
// --require-signatures passes), and tofu installs from it through nginx.
// The repository template is written as in OpenTofu's CLI configuration
// (docs/manifest.md says it is copied from there), and escaped for HCL.
func TestUpstreamOCIRegistry(t *testing.T) {
	requireMirroredHostPlatform(t)
	pkgs := asciiUpstreamPackages
	f := newUpstreamOrigin(t, pkgs)
	srv := registrytest.StartWith(t, registrytest.Options{CA: f.ca})
	env := append(slices.Clone(f.env), "DOCKER_CONFIG="+srv.DockerConfigDir)
	template := srv.Host + "/providers/${hostname}/${namespace}/${type}"

	writeFile(t, filepath.Join(f.work, "mirror.hcl"), upstreamManifest(pkgs, upstreamHosts(f.reg.ServicesURL, pkgs)))
	if stdout, stderr, code := runTfmirror(t, f.work, env, "build", "--config", "mirror.hcl", "--out", "oci://"+template); code != 0 {
		t.Fatalf("build into the registry: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	for _, tc := range []struct{ name, written string }{
		{"template as in OpenTofu", template},
		{"template escaped for HCL", strings.ReplaceAll(template, "${", "$${")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := filepath.Join(t.TempDir(), "site")
			before := len(f.reg.Requests())
			installation := fmt.Sprintf("provider_installation {\n  oci_mirror {\n    repository_template = %q\n  }\n}\n", tc.written)
			stdout, stderr, code := buildFromUpstream(t, f, env, pkgs, installation, site)
			if code != 0 {
				t.Fatalf("build from the registry: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			checkNoOriginContact(t, f, before, "the build from the registry")
			if !strings.Contains(stdout, "4 mirrored") || !strings.Contains(stdout, "signed by "+f.reg.KeyID) {
				t.Errorf("the build does not report 4 packages signed by the origin's key %s:\n%s", f.reg.KeyID, stdout)
			}
			checkOriginSignatureKept(t, f, site, pkgs)
			if code, res := verifyRequiringSignatures(t, f, site); code != 0 || len(res.Problems) > 0 || len(res.Warnings) > 0 {
				t.Errorf("verify --require-signatures: exit %d, %d problems, %d warnings; want 0, none, none: %+v",
					code, len(res.Problems), len(res.Warnings), res)
			}
			installFromSite(t, f, site, pkgs)
		})
	}
}

// TestUpstreamTamperedMirrorIsRefused builds A from the origin, serves it
// with nginx and tampers with it: an archive A serves, or the SHA256SUMS it
// kept. A build from A must exit 3, name the package, and publish nothing
// of it.
func TestUpstreamTamperedMirrorIsRefused(t *testing.T) {
	pkgs := asciiUpstreamPackages
	f := newFixture(t, pkgs, func(servicesURL string) string {
		return upstreamManifest(pkgs, upstreamHosts(servicesURL, pkgs))
	})
	baseA := startNginx(t, f.site, f.ca)
	foo := pkgs[0]
	const plat = "linux_amd64"

	t.Run("archive", func(t *testing.T) {
		defer tamper(t, filepath.Join(f.site, filepath.FromSlash(networkDir(foo)), foo.zip(plat)), flipMiddleByte)()
		stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, mirrorOnlyCLI(baseA), "site-archive")
		if code != 3 {
			t.Fatalf("build from a mirror serving a tampered archive: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		checkRefusedPackage(t, stdout+stderr, filepath.Join(f.work, "site-archive"), foo, plat)
	})

	t.Run("SHA256SUMS", func(t *testing.T) {
		// Another digest for the first line, still well-formed: only the
		// signature can tell.
		defer tamper(t, filepath.Join(f.site, filepath.FromSlash(keptFile(foo, "SHA256SUMS"))), func(b []byte) {
			if b[0] == '0' {
				b[0] = '1'
			} else {
				b[0] = '0'
			}
		})()
		stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, mirrorOnlyCLI(baseA), "site-sums")
		if code != 3 {
			t.Fatalf("build from a mirror whose kept SHA256SUMS was changed: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		out := filepath.Join(f.work, "site-sums")
		checkReleaseRefused(t, stdout+stderr, out, foo)
	})
}

// checkHashesOnlyBuild checks a build from an upstream of hashes only: the
// origin was not contacted, the output warns that only the upstream's
// hashes vouch, and each release's provenance says so, with no key.
func checkHashesOnlyBuild(t *testing.T, f *fixture, before int, output, upstreamName, site string, pkgs []pkgVersion) {
	t.Helper()
	checkNoOriginContact(t, f, before, "the build")
	if !strings.Contains(output, upstreamName+" "+hashesOnlyWarning) {
		t.Errorf("the build does not warn that only the hashes of %s vouch:\n%s", upstreamName, output)
	}
	for _, p := range pkgs {
		prov := readKeptProvenance(t, site, p)
		if prov.HashesOnly != upstreamName || prov.KeyID != "" {
			t.Errorf("%s %s: provenance hashes_only %q, key_id %q; want %q and no key", p.addr(), p.version, prov.HashesOnly, prov.KeyID, upstreamName)
		}
	}
}

// replicaHosts is a host block for every host of pkgs pointing at that
// host's registry replica below base, as a manifest or CLI configuration
// that uses the replica as the origin writes it.
func replicaHosts(base string, pkgs []pkgVersion) string {
	return hostBlocks(pkgs, func(p pkgVersion) string {
		ascii, _, _ := strings.Cut(networkDir(p), "/")
		return base + "replica/" + ascii + "/v1/providers/"
	})
}

// TestUpstreamRegistryReplica builds A from the origin, adds its registry
// replica (`tfmirror replica`), serves it with nginx and builds B with the
// replica as the origin of every host (host blocks, direct installation):
// each signature is verified again against the key the replica's download
// documents advertise, B keeps the origin's SHA256SUMS, signature and key
// (verify --require-signatures passes), the origin is never contacted, and
// tofu installs from B. A replica whose kept signature was changed is
// refused with exit 3 and nothing of that release is published.
func TestUpstreamRegistryReplica(t *testing.T) {
	requireMirroredHostPlatform(t)
	pkgs := upstreamPackages
	f := newFixture(t, pkgs, func(servicesURL string) string {
		return upstreamManifest(pkgs, upstreamHosts(servicesURL, pkgs))
	})
	if stdout, stderr, code := runTfmirror(t, f.work, f.env, "replica", f.site); code != 0 {
		t.Fatalf("tfmirror replica: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	base := startNginx(t, f.site, f.ca)

	before := len(f.reg.Requests())
	stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, replicaHosts(base, pkgs), "site-b")
	if code != 0 {
		t.Fatalf("build B from A's replica: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkNoOriginContact(t, f, before, "the build from the replica")
	if !strings.Contains(stdout, "6 mirrored") || !strings.Contains(stdout, "signed by "+f.reg.KeyID) {
		t.Errorf("the build from the replica does not report 6 packages signed by the origin's key %s:\n%s", f.reg.KeyID, stdout)
	}
	siteB := filepath.Join(f.work, "site-b")
	checkOriginSignatureKept(t, f, siteB, pkgs)
	if code, res := verifyRequiringSignatures(t, f, siteB); code != 0 || len(res.Problems) > 0 || len(res.Warnings) > 0 {
		t.Errorf("verify --require-signatures B: exit %d, %d problems, %d warnings; want 0, none, none: %+v",
			code, len(res.Problems), len(res.Warnings), res)
	}
	installFromSite(t, f, siteB, pkgs)

	t.Run("tampered signature", func(t *testing.T) {
		foo := pkgs[0]
		defer tamper(t, filepath.Join(f.site, filepath.FromSlash(keptFile(foo, "SHA256SUMS.sig"))), func(b []byte) { b[len(b)-1] ^= 1 })()
		stdout, stderr, code := buildFromUpstream(t, f, f.env, pkgs, replicaHosts(base, pkgs), "site-tampered")
		if code != 3 {
			t.Fatalf("build from a replica whose signature was changed: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		out := filepath.Join(f.work, "site-tampered")
		checkReleaseRefused(t, stdout+stderr, out, foo)
	})
}

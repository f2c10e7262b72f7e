package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// These tests drive tfmirror on OpenTofu configurations (the monorepo in
// testdata/monorepo) and compare what it selects and the lock files it
// writes with what the real tofu does against the origin registry.

// monorepoRoots are the root modules of testdata/monorepo.
var monorepoRoots = []string{"app-a", "app-b", "platform"}

// lockPlatforms are the platforms the lock tests record hashes for.
var lockPlatforms = []string{"linux_amd64", "darwin_arm64"}

// monorepoPackages is every provider version testdata/monorepo may select,
// and the versions it must never select.
var monorepoPackages = func() []pkgVersion {
	two := []string{"linux_amd64", "darwin_arm64"}
	var pkgs []pkgVersion
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "2.0.0"} {
		pkgs = append(pkgs, pkgVersion{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: v, platforms: threePlatforms})
	}
	for _, v := range []string{"0.1.0", "0.2.0"} {
		pkgs = append(pkgs, pkgVersion{host: "registry.opentofu.org", ns: "hashicorp", typ: "bar", version: v, platforms: two})
	}
	for _, v := range []string{"3.0.0", "3.1.0"} {
		pkgs = append(pkgs, pkgVersion{host: "registry.opentofu.org", ns: "hashicorp", typ: "baz", version: v, platforms: two})
	}
	for _, v := range []string{"1.0.0", "1.5.0"} {
		pkgs = append(pkgs, pkgVersion{host: "registry.test", ns: "acme", typ: "qux", version: v, platforms: two})
	}
	return pkgs
}()

// monorepoExpected is the selection testdata/monorepo/README.md documents
// (provider address -> version, per root). tofu is the reference; this only
// catches a fixture that drifted from its documentation.
var monorepoExpected = map[string]map[string]string{
	"app-a": {
		"registry.opentofu.org/hashicorp/foo": "1.1.0",
		"registry.opentofu.org/hashicorp/bar": "0.2.0",
		"registry.opentofu.org/hashicorp/baz": "3.1.0",
	},
	"app-b": {
		"registry.opentofu.org/hashicorp/foo": "1.2.0",
		"registry.test/acme/qux":              "1.5.0",
		"registry.opentofu.org/hashicorp/baz": "3.0.0",
		"registry.opentofu.org/hashicorp/bar": "0.1.0",
	},
	"platform": {
		"registry.opentofu.org/hashicorp/foo": "1.1.0",
		"registry.test/acme/qux":              "1.0.0",
		"registry.opentofu.org/hashicorp/bar": "0.2.0",
	},
}

// monorepoFixture is a fake registry serving monorepoPackages, and a
// working directory holding a mirror.hcl with host blocks pointing
// registry.opentofu.org and registry.test at it.
type monorepoFixture struct {
	ca  *testca.CA
	reg *fakeregistry.Registry
	env []string // SSL_CERT_FILE for every client
	// work is tfmirror's working directory: mirror.hcl, and site/ once built.
	work string
	// directCLI is a tofu CLI configuration that installs directly from the
	// fake registry (host blocks, no provider_installation block).
	directCLI string
}

func newMonorepoFixture(t *testing.T) *monorepoFixture {
	t.Helper()
	fx := &monorepoFixture{ca: testca.New(t)}
	fx.reg = fakeregistry.New(t, fx.ca)
	for _, p := range monorepoPackages {
		fx.reg.Add(p.ns, p.typ, p.version, p.platforms...)
	}
	// app-b calls a registry module (installed under .terraform/modules):
	// the origin offers it too, since a build mirrors the modules that
	// configurations call.
	installed := filepath.Join("..", "testdata", "monorepo", "app-b", ".terraform", "modules", "net")
	var entries []zipbuild.Entry
	for _, rel := range []string{"main.tf", "versions.tf", "dns/main.tf"} {
		data, err := os.ReadFile(filepath.Join(installed, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, zipbuild.File(rel, string(data)))
	}
	fx.reg.AddFile("network.zip", zipbuild.Bytes(t, entries...))
	fx.reg.AddModule("acme/network/foo", "1.0.0", "/files/network.zip", false)
	fx.env = caFileEnv(t, fx.ca)
	fx.work = t.TempDir()
	hosts := fmt.Sprintf(`host "registry.opentofu.org" {
  services = { "providers.v1" = %[1]q }
}

host "registry.test" {
  services = { "providers.v1" = %[1]q, "modules.v1" = %[2]q }
}
`, fx.reg.ServicesURL, fx.reg.ModulesURL)
	writeFile(t, filepath.Join(fx.work, "mirror.hcl"), hosts)
	fx.directCLI = hosts
	return fx
}

// copyMonorepo copies the whole of testdata/monorepo (lock files and
// .terraform directories included, so that ../modules and installed
// modules resolve) into a fresh temporary directory and returns the copy.
func copyMonorepo(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "monorepo")
	copyTree(t, filepath.Join("..", "testdata", "monorepo"), dst)
	return dst
}

// copyTree copies the directories and regular files below src to dst.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, 0o644)
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
}

// rootDirs returns the absolute paths of the monorepo roots in a copy.
func rootDirs(copyDir string) []string {
	var dirs []string
	for _, r := range monorepoRoots {
		dirs = append(dirs, filepath.Join(copyDir, r))
	}
	return dirs
}

func platformFlags(flag string) []string {
	var out []string
	for _, p := range lockPlatforms {
		out = append(out, flag, p)
	}
	return out
}

// buildSite runs `tfmirror build` on a fresh copy of every monorepo root
// for lockPlatforms into <work>/site (plus extra arguments) and returns the
// site and the copy. The build must succeed.
func (fx *monorepoFixture) buildSite(t *testing.T, extra ...string) (site, copyDir string) {
	t.Helper()
	copyDir = copyMonorepo(t)
	args := append([]string{"build"}, rootDirs(copyDir)...)
	args = append(args, platformFlags("--platform")...)
	args = append(args, "--config", "mirror.hcl", "--out", "site")
	args = append(args, extra...)
	stdout, stderr, code := runTfmirror(t, fx.work, fx.env, args...)
	if code != 0 {
		t.Fatalf("tfmirror build: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return filepath.Join(fx.work, "site"), copyDir
}

// mirrorOnlyCLI is a tofu CLI configuration that installs only from the
// network mirror at base: no direct installation, no host blocks.
func mirrorOnlyCLI(base string) string {
	return fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", base)
}

// lockVersions reads a lock file as provider address -> version.
func lockVersions(t testing.TB, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for addr, e := range parseLock(t, path) {
		out[addr] = e.Version
	}
	return out
}

func formatSelection(m map[string]string) string {
	var lines []string
	for a, v := range m {
		lines = append(lines, a+" "+v)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// tofuInit runs `tofu init` in dir and fails the test if it fails.
func (fx *monorepoFixture) tofuInit(t *testing.T, tofu, dir, cli string, args ...string) {
	t.Helper()
	args = append([]string{"init", "-input=false", "-backend=false"}, args...)
	if out, err := runTofu(t, tofu, dir, cli, fx.env, args...); err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", filepath.Base(tofu), strings.Join(args, " "), dir, err, out)
	}
}

// tofuProvidersLocks runs `tofu providers lock -platform=...` for
// lockPlatforms directly against the fake registry in a fresh copy of each
// root, and returns the lock files it wrote, by root.
func (fx *monorepoFixture) tofuProvidersLocks(t *testing.T) map[string][]byte {
	t.Helper()
	tofu := tofuBin(t)
	copyA := copyMonorepo(t)
	locks := map[string][]byte{}
	for _, root := range monorepoRoots {
		// -no-color after "lock": runTofu would put it after "providers",
		// where it hides the "lock" subcommand.
		args := []string{"providers", "lock", "-no-color"}
		for _, p := range lockPlatforms {
			args = append(args, "-platform="+p)
		}
		dir := filepath.Join(copyA, root)
		// providers lock reads modules from .terraform/modules only, so
		// install them first (local ones; app-b's registry module is there
		// already). "get" does not touch the lock file.
		if out, err := runTofu(t, tofu, dir, fx.directCLI, fx.env, "get"); err != nil {
			t.Fatalf("tofu get in %s: %v\n%s", root, err, out)
		}
		if out, err := runTofu(t, tofu, dir, fx.directCLI, fx.env, args...); err != nil {
			t.Fatalf("tofu providers lock in %s: %v\n%s", root, err, out)
		}
		data, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		locks[root] = data
	}
	return locks
}

// compareLock reports an error with a line diff if got differs from want.
func compareLock(t *testing.T, what string, want, got []byte) {
	t.Helper()
	if string(want) != string(got) {
		t.Errorf("%s differs from tofu providers lock's (- tofu, + tfmirror):\n%s", what, lineDiff(string(want), string(got)))
	}
}

// lineDiff is a minimal line-based diff: "-" lines only in a, "+" lines
// only in b, " " common lines.
func lineDiff(a, b string) string {
	x := strings.SplitAfter(a, "\n")
	y := strings.SplitAfter(b, "\n")
	// lcs[i][j] = length of the LCS of x[i:] and y[j:]
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	line := func(prefix, s string) {
		if s == "" {
			return
		}
		if !strings.HasSuffix(s, "\n") {
			s += "\n\\ no newline at end of file\n"
		}
		sb.WriteString(prefix + s)
	}
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			line(" ", x[i])
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			line("-", x[i])
			i++
		default:
			line("+", y[j])
			j++
		}
	}
	for ; i < len(x); i++ {
		line("-", x[i])
	}
	for ; j < len(y); j++ {
		line("+", y[j])
	}
	return sb.String()
}

// siteProviders returns the versions listed in every index.json of a site,
// keyed by provider directory (host/ns/type).
func siteProviders(t testing.TB, site string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for rel := range treeHashes(t, site) {
		if strings.HasPrefix(rel, "modules/") {
			continue // module packages: not providers
		}
		if path := strings.TrimSuffix(rel, "/index.json"); path != rel {
			raw, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			var idx struct {
				Versions map[string]json.RawMessage `json:"versions"`
			}
			if err := json.Unmarshal(raw, &idx); err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			versions := []string{}
			for v := range idx.Versions {
				versions = append(versions, v)
			}
			sort.Strings(versions)
			out[path] = versions
		}
	}
	return out
}

// ---------------------------------------------------------------------------

// TestConfigurationSelectionMatchesTofu checks that `tfmirror build DIR...`
// mirrors exactly the provider versions `tofu init` selects for each root
// (the locked one, else the newest satisfying every constraint), and that
// tofu, installing only from that mirror, selects the same.
func TestConfigurationSelectionMatchesTofu(t *testing.T) {
	tofu := tofuBin(t)
	fx := newMonorepoFixture(t)

	// (a) what tofu selects, installing directly from the registry
	copyInit := copyMonorepo(t)
	selected := map[string]map[string]string{}
	union := map[string]map[string]bool{} // provider -> versions
	for _, root := range monorepoRoots {
		dir := filepath.Join(copyInit, root)
		fx.tofuInit(t, tofu, dir, fx.directCLI)
		sel := lockVersions(t, filepath.Join(dir, ".terraform.lock.hcl"))
		selected[root] = sel
		t.Logf("tofu selects for %s:\n%s", root, formatSelection(sel))
		if got, want := formatSelection(sel), formatSelection(monorepoExpected[root]); got != want {
			t.Errorf("fixture: tofu selects for %s\n%s\nbut testdata/monorepo/README.md documents\n%s", root, got, want)
		}
		for addr, v := range sel {
			if union[addr] == nil {
				union[addr] = map[string]bool{}
			}
			union[addr][v] = true
		}
	}

	// (b) tfmirror build of all roots mirrors exactly the union of those
	site, copyBuild := fx.buildSite(t)
	before := treeHashes(t, filepath.Join("..", "testdata", "monorepo"))
	if diff := diffTrees(before, treeHashes(t, copyBuild)); diff != "" {
		t.Errorf("tfmirror build (without --write-lock-files) changed the configurations:\n%s", diff)
	}
	for root, sel := range selected {
		for addr, v := range sel {
			if _, err := os.Stat(filepath.Join(site, filepath.FromSlash(addr), v+".json")); err != nil {
				t.Errorf("tofu selects %s %s for %s, but the mirror lacks it: %v", addr, v, root, err)
			}
		}
	}
	// app-b's registry module, which tofu had installed, is mirrored too.
	if _, err := os.Stat(filepath.Join(site, "modules", "registry.test", "acme", "network", "foo", "1.0.0.zip")); err != nil {
		t.Errorf("the mirror lacks the module app-b calls: %v", err)
	}
	got := siteProviders(t, site)
	want := map[string][]string{}
	for addr, vs := range union {
		want[addr] = slices.Sorted(maps.Keys(vs))
	}
	for addr, w := range want {
		if g, ok := got[addr]; !ok {
			t.Errorf("the mirror has no index.json for %s (tofu selects %q)", addr, w)
		} else if !slices.Equal(g, w) {
			t.Errorf("the mirror lists %s versions %q; tofu selects exactly %q across the roots", addr, g, w)
		}
	}
	for addr, g := range got {
		if _, ok := want[addr]; !ok {
			t.Errorf("the mirror has %s %q, which tofu selects for no root", addr, g)
		}
	}
	// no file of any other version either
	for rel := range treeHashes(t, site) {
		dir, name := filepath.ToSlash(filepath.Dir(rel)), filepath.Base(rel)
		versions, ok := want[dir]
		if !ok || name == "index.json" {
			continue // reported above
		}
		v := strings.TrimSuffix(name, ".json")
		if typ := dir[strings.LastIndex(dir, "/")+1:]; strings.HasPrefix(name, "terraform-provider-"+typ+"_") {
			v, _, _ = strings.Cut(strings.TrimPrefix(name, "terraform-provider-"+typ+"_"), "_")
		}
		if !slices.Contains(versions, v) {
			t.Errorf("the mirror holds %s, of %s %s, which tofu selects for no root", rel, dir, v)
		}
	}
	// every selected version has both platforms (foo also only these two:
	// windows_amd64 was not asked for)
	for addr, vs := range want {
		for _, v := range vs {
			var doc versionDoc
			raw, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(addr), v+".json"))
			if err != nil {
				continue // reported above
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Errorf("%s/%s.json: %v", addr, v, err)
				continue
			}
			var plats []string
			for p := range doc.Archives {
				plats = append(plats, p)
			}
			sort.Strings(plats)
			if wantPlats := slices.Sorted(slices.Values(lockPlatforms)); !slices.Equal(plats, wantPlats) {
				t.Errorf("%s/%s.json platforms %q, want %q", addr, v, plats, wantPlats)
			}
		}
	}

	// (c) tofu installing only from the mirror selects the same
	base := startNginx(t, site, fx.ca)
	copyMirror := copyMonorepo(t)
	for _, root := range monorepoRoots {
		t.Run(root, func(t *testing.T) {
			requests := len(fx.reg.Requests())
			dir := filepath.Join(copyMirror, root)
			fx.tofuInit(t, tofu, dir, mirrorOnlyCLI(base))
			sel := lockVersions(t, filepath.Join(dir, ".terraform.lock.hcl"))
			if got, want := formatSelection(sel), formatSelection(selected[root]); got != want {
				t.Errorf("tofu init through the mirror selects\n%s\nbut directly from the registry\n%s", got, want)
			}
			if reqs := fx.reg.Requests(); len(reqs) != requests {
				t.Errorf("the registry was contacted during init through the mirror: %q", reqs[requests:])
			}
		})
	}
}

// TestLockMatchesTofuProvidersLock checks that `tfmirror lock` writes, from
// a built mirror only (a directory or its URL), byte for byte the lock file
// that `tofu providers lock -platform=...` writes against the origin, and
// that tofu accepts it read-only when installing from the mirror.
func TestLockMatchesTofuProvidersLock(t *testing.T) {
	tofu := tofuBin(t)
	fx := newMonorepoFixture(t)
	want := fx.tofuProvidersLocks(t)

	site, _ := fx.buildSite(t)
	siteBefore := treeHashes(t, site)
	base := startNginx(t, site, fx.ca)
	requests := len(fx.reg.Requests())

	// B: from the site directory, one root at a time, run in the root (no DIR)
	copyB := copyMonorepo(t)
	for _, root := range monorepoRoots {
		args := append([]string{"lock", "--mirror", site}, platformFlags("--platform")...)
		stdout, stderr, code := runTfmirror(t, filepath.Join(copyB, root), fx.env, args...)
		if code != 0 {
			t.Errorf("tfmirror lock --mirror %s in %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", site, root, code, stdout, stderr)
		}
	}
	// C: from the served mirror, every root in one run, relative DIRs
	copyC := copyMonorepo(t)
	args := append([]string{"lock"}, monorepoRoots...)
	args = append(args, "--mirror", base)
	args = append(args, platformFlags("--platform")...)
	stdout, stderr, code := runTfmirror(t, copyC, fx.env, args...)
	if code != 0 {
		t.Errorf("tfmirror lock --mirror %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", base, code, stdout, stderr)
	}

	if reqs := fx.reg.Requests(); len(reqs) != requests {
		t.Errorf("tfmirror lock contacted the origin registry: %q", reqs[requests:])
	}
	if diff := diffTrees(siteBefore, treeHashes(t, site)); diff != "" {
		t.Errorf("tfmirror lock changed the mirror:\n%s", diff)
	}

	for _, root := range monorepoRoots {
		for _, c := range []struct{ name, dir string }{{"--mirror DIR", copyB}, {"--mirror URL", copyC}} {
			got, err := os.ReadFile(filepath.Join(c.dir, root, ".terraform.lock.hcl"))
			if err != nil {
				t.Errorf("tfmirror lock %s: %v", c.name, err)
				continue
			}
			compareLock(t, fmt.Sprintf("%s/.terraform.lock.hcl from tfmirror lock %s", root, c.name), want[root], got)
		}
	}
	// app-a's lock pins foo 1.1.0 although 1.2.0 matches; tofu keeps it.
	if v := lockVersions(t, filepath.Join(copyB, "app-a", ".terraform.lock.hcl"))["registry.opentofu.org/hashicorp/foo"]; v != "1.1.0" {
		t.Errorf("app-a: tfmirror lock moved foo from the locked 1.1.0 to %q", v)
	}

	// tofu accepts the lock files as they are, installing from the mirror only.
	for _, root := range monorepoRoots {
		t.Run("init readonly/"+root, func(t *testing.T) {
			dir := filepath.Join(copyB, root)
			lockPath := filepath.Join(dir, ".terraform.lock.hcl")
			before, err := os.ReadFile(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			fx.tofuInit(t, tofu, dir, mirrorOnlyCLI(base), "-lockfile=readonly")
			after, err := os.ReadFile(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Errorf("tofu init -lockfile=readonly changed the lock file:\n%s", lineDiff(string(before), string(after)))
			}
		})
	}
	// And so does the oldest supported OpenTofu (no trust_all_hashes).
	for _, root := range monorepoRoots {
		t.Run("old tofu init readonly/"+root, func(t *testing.T) {
			old := oldTofuBin(t)
			dir := filepath.Join(copyC, root)
			lockPath := filepath.Join(dir, ".terraform.lock.hcl")
			before, err := os.ReadFile(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			fx.tofuInit(t, old, dir, mirrorOnlyCLI(base), "-lockfile=readonly")
			after, err := os.ReadFile(lockPath)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Errorf("tofu 1.10 init -lockfile=readonly changed the lock file:\n%s", lineDiff(string(before), string(after)))
			}
		})
	}
}

// TestBuildWriteLockFiles checks that `tfmirror build --write-lock-files`
// writes the lock files `tofu providers lock` writes for the same platforms.
func TestBuildWriteLockFiles(t *testing.T) {
	fx := newMonorepoFixture(t)
	want := fx.tofuProvidersLocks(t)
	_, copyDir := fx.buildSite(t, "--write-lock-files")
	for _, root := range monorepoRoots {
		got, err := os.ReadFile(filepath.Join(copyDir, root, ".terraform.lock.hcl"))
		if err != nil {
			t.Errorf("tfmirror build --write-lock-files: %v", err)
			continue
		}
		compareLock(t, root+"/.terraform.lock.hcl from tfmirror build --write-lock-files", want[root], got)
	}
}

// TestBadConfigurationInputExitsTwo checks that configurations tofu would
// refuse make `tfmirror build` and `tfmirror lock` exit 2, say where the
// fault is, and write nothing.
func TestBadConfigurationInputExitsTwo(t *testing.T) {
	fx := newMonorepoFixture(t)
	site, _ := fx.buildSite(t)

	type badCase struct {
		name  string
		setup func(t *testing.T, copyDir string) string // returns the bad root (relative to copyDir)
		want  []string                                  // substrings stderr must contain
		// unreadable is a file (relative to copyDir) made mode 000 while
		// tfmirror runs.
		unreadable string
	}
	const fooOK = `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = %q
    }
  }
}
`
	cases := []badCase{
		{
			name: "syntax error",
			setup: func(t *testing.T, c string) string {
				writeFile(t, filepath.Join(c, "app-a", "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "~> 1.0"
    }
  }
}

resource "foo_thing" "a" {
  count = = 2
}
`)
				return "app-a"
			},
			want: []string{"main.tf:11"},
		},
		{
			name: "unknown provider",
			setup: func(t *testing.T, c string) string {
				writeFile(t, filepath.Join(c, "nope", "main.tf"), `terraform {
  required_providers {
    nope = {
      source = "hashicorp/nope"
    }
  }
}
`)
				return "nope"
			},
			want: []string{"hashicorp/nope"},
		},
		{
			name: "unsatisfiable constraint",
			setup: func(t *testing.T, c string) string {
				writeFile(t, filepath.Join(c, "high", "main.tf"), fmt.Sprintf(fooOK, "> 9.0.0"))
				return "high"
			},
			want: []string{"hashicorp/foo"},
		},
		{
			name: "garbage lock file",
			setup: func(t *testing.T, c string) string {
				writeFile(t, filepath.Join(c, "app-a", ".terraform.lock.hcl"), "this is {{ not a lock file\n\x00\x01\n")
				return "app-a"
			},
			want: []string{".terraform.lock.hcl"},
		},
		{
			name: "lock contradicts constraints",
			setup: func(t *testing.T, c string) string {
				writeFile(t, filepath.Join(c, "pinned", "main.tf"), fmt.Sprintf(fooOK, ">= 1.1.0"))
				writeFile(t, filepath.Join(c, "pinned", ".terraform.lock.hcl"), `# This file is maintained automatically by "tofu init".
# Manual edits may be lost in future updates.

provider "registry.opentofu.org/hashicorp/foo" {
  version     = "1.0.0"
  constraints = ">= 1.1.0"
}
`)
				return "pinned"
			},
			want: []string{"hashicorp/foo"},
		},
	}
	if os.Geteuid() != 0 {
		cases = append(cases, badCase{
			name:       "unreadable lock file",
			setup:      func(t *testing.T, c string) string { return "app-a" },
			unreadable: "app-a/.terraform.lock.hcl",
			want:       []string{".terraform.lock.hcl"},
		})
	} else {
		t.Log("running as root: chmod 000 does not make a lock file unreadable; the garbage lock file is the unreadable case")
	}

	siteBefore := treeHashes(t, site)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			copyDir := copyMonorepo(t)
			root := tc.setup(t, copyDir)
			rootDir := filepath.Join(copyDir, root)
			// hashTree hashes the copy, with the unreadable file readable
			// for the moment.
			hashTree := func() map[string]string {
				t.Helper()
				if tc.unreadable == "" {
					return treeHashes(t, copyDir)
				}
				p := filepath.Join(copyDir, filepath.FromSlash(tc.unreadable))
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := os.Chmod(p, 0); err != nil {
						t.Fatal(err)
					}
				}()
				return treeHashes(t, copyDir)
			}
			before := hashTree()
			if tc.unreadable != "" {
				p := filepath.Join(copyDir, filepath.FromSlash(tc.unreadable))
				if err := os.Chmod(p, 0); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = os.Chmod(p, 0o644) })
			}

			check := func(what, stderr string, code int) {
				t.Helper()
				if code != 2 {
					t.Errorf("%s: exit %d, want 2 (bad input)", what, code)
				}
				for _, w := range tc.want {
					if !strings.Contains(stderr, w) {
						t.Errorf("%s: stderr does not name %q:\n%s", what, w, stderr)
					}
				}
				if diff := diffTrees(before, hashTree()); diff != "" {
					t.Errorf("%s changed the configurations:\n%s", what, diff)
				}
			}

			// build: exits 2 and creates no site
			work := t.TempDir()
			manifest, err := os.ReadFile(filepath.Join(fx.work, "mirror.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(work, "mirror.hcl"), string(manifest))
			_, stderr, code := runTfmirror(t, work, fx.env,
				"build", rootDir, "--platform", "linux_amd64", "--config", "mirror.hcl", "--out", "site")
			check("tfmirror build", stderr, code)
			if _, err := os.Lstat(filepath.Join(work, "site")); !os.IsNotExist(err) {
				t.Errorf("tfmirror build with bad input created the output directory (%v)", err)
			}

			// build --write-lock-files: same
			_, stderr, code = runTfmirror(t, work, fx.env,
				"build", rootDir, "--platform", "linux_amd64", "--config", "mirror.hcl", "--out", "site", "--write-lock-files")
			check("tfmirror build --write-lock-files", stderr, code)
			if _, err := os.Lstat(filepath.Join(work, "site")); !os.IsNotExist(err) {
				t.Errorf("tfmirror build --write-lock-files with bad input created the output directory (%v)", err)
			}

			// lock, the bad root alone
			_, stderr, code = runTfmirror(t, copyDir, fx.env, "lock", root, "--mirror", site, "--platform", "linux_amd64")
			check("tfmirror lock", stderr, code)

			// lock, a good root (app-b has no lock file) and the bad one:
			// nothing is written, not even the good root's lock file.
			if root != "app-b" {
				_, stderr, code = runTfmirror(t, copyDir, fx.env, "lock", "app-b", root, "--mirror", site, "--platform", "linux_amd64")
				check("tfmirror lock app-b "+root, stderr, code)
			}
		})
	}
	if diff := diffTrees(siteBefore, treeHashes(t, site)); diff != "" {
		t.Errorf("tfmirror lock changed the mirror:\n%s", diff)
	}
}

// TestTerraformAcceptsLockFromMirror checks that Terraform, installing
// only from the mirror, accepts as they are the lock files tfmirror wrote.
// The monorepo is not usable with Terraform (it reads no .tofu files and
// resolves "hashicorp/foo" to registry.terraform.io), so this uses a root
// that names every provider's registry host explicitly.
func TestTerraformAcceptsLockFromMirror(t *testing.T) {
	terraform := terraformBin(t)
	fx := newMonorepoFixture(t)
	dir := filepath.Join(t.TempDir(), "tf")
	writeFile(t, filepath.Join(dir, "main.tf"), `terraform {
  required_providers {
    foo = {
      source  = "registry.opentofu.org/hashicorp/foo"
      version = "~> 1.0"
    }
    qux = {
      source  = "registry.test/acme/qux"
      version = ">= 1.0.0"
    }
  }
}
`)
	args := append([]string{"build", dir}, platformFlags("--platform")...)
	args = append(args, "--config", "mirror.hcl", "--out", "site", "--write-lock-files")
	stdout, stderr, code := runTfmirror(t, fx.work, fx.env, args...)
	if code != 0 {
		t.Fatalf("tfmirror build: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	before, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	wantSel := map[string]string{
		"registry.opentofu.org/hashicorp/foo": "1.2.0",
		"registry.test/acme/qux":              "1.5.0",
	}
	if got := lockVersions(t, lockPath); formatSelection(got) != formatSelection(wantSel) {
		t.Errorf("tfmirror locked\n%s\nwant\n%s", formatSelection(got), formatSelection(wantSel))
	}

	base := startNginx(t, filepath.Join(fx.work, "site"), fx.ca)
	if out, err := runTofu(t, terraform, dir, mirrorOnlyCLI(base), fx.env, "init", "-input=false", "-lockfile=readonly"); err != nil {
		t.Fatalf("terraform init -lockfile=readonly: %v\n%s", err, out)
	}
	after, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("terraform init -lockfile=readonly changed the lock file:\n%s", lineDiff(string(before), string(after)))
	}
}

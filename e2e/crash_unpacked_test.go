package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

// The unpacked crash test mirrors, besides the crash registry's 1 MiB
// one-file packages (hashicorp/alpha and hashicorp/beta), a provider on an
// internationalized hostname whose packages hold many small files, so that
// a half-extracted package would show as one with files missing.
const (
	unpackedIDNHost      = "bücher.example"
	unpackedIDNPunycode  = "xn--bcher-kva.example" // the store's directory for it
	unpackedDeltaEntries = 12                      // files in each acme/delta package

	// The depth of a package directory below OUT:
	// <host>/<namespace>/<type>/<version>/<os_arch>.
	unpackedPackageDepth = 5
)

// unpackedStoreHosts maps the Unicode hostnames of the view to the punycode
// directories of the store behind it, written out here rather than computed
// with the code under test.
var unpackedStoreHosts = map[string]string{
	"registry.opentofu.org": "registry.opentofu.org",
	unpackedIDNHost:         unpackedIDNPunycode,
}

// newUnpackedCrashRegistry is the crash registry with acme/delta added on
// bücher.example, and two manifests for it in c.work:
// unpacked-partial.hcl (alpha and delta 1.0.0 for two platforms) and
// unpacked-full.hcl (every version of alpha, beta and delta for three).
func newUnpackedCrashRegistry(t *testing.T) *crashRegistry {
	t.Helper()
	c := newCrashRegistry(t)
	for _, v := range crashVersions {
		// One platform at a time, so that each platform's archive differs
		// (its provider binary names the platform): this test is about
		// unpacking, and platforms sharing one archive currently make the
		// download phase itself fail (the partial download named by their
		// common digest is reused and removed under one another).
		for _, plat := range threePlatforms {
			c.reg.AddManyEntries("acme", "delta", v, unpackedDeltaEntries, plat)
		}
	}
	hosts := fmt.Sprintf(`
host "registry.opentofu.org" {
  services = { "providers.v1" = %[1]q }
}

host %[2]q {
  services = { "providers.v1" = %[1]q }
}
`, c.reg.ServicesURL, unpackedIDNHost)
	writeFile(t, filepath.Join(c.work, "unpacked-partial.hcl"), `platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/alpha" {
  versions = "1.0.0"
}

provider "`+unpackedIDNHost+`/acme/delta" {
  versions = "1.0.0"
}
`+hosts)
	writeFile(t, filepath.Join(c.work, "unpacked-full.hcl"), `platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/alpha" {
  versions = ">= 1.0.0"
}

provider "hashicorp/beta" {
  versions = ">= 1.0.0"
}

provider "`+unpackedIDNHost+`/acme/delta" {
  versions = ">= 1.0.0"
}
`+hosts)
	return c
}

// buildUnpacked runs `tfmirror build --layout unpacked` to completion and
// requires success.
func buildUnpacked(t *testing.T, c *crashRegistry, manifest, site string, extra ...string) {
	t.Helper()
	args := append([]string{"build", "--config", manifest, "--out", site, "--layout", "unpacked"}, extra...)
	stdout, stderr, code := runTfmirror(t, c.work, c.env, args...)
	if code != 0 {
		t.Fatalf("tfmirror %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
}

// startUnpackedBuild starts the full unpacked build into site as a process
// the test may kill.
func startUnpackedBuild(t *testing.T, c *crashRegistry, site string) *tfmirrorProc {
	t.Helper()
	return startTfmirror(t, c.work, c.env, "build", "--config", "unpacked-full.hcl", "--out", site,
		"--layout", "unpacked", "--parallel", crashParallel, "--lock-timeout", "0")
}

// copyTreeKeepModes copies the directories and regular files below src to
// dst with their permission bits, whatever the umask.
func copyTreeKeepModes(t testing.TB, src, dst string) {
	t.Helper()
	type dirMode struct {
		path string
		mode fs.FileMode
	}
	var dirs []dirMode
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, mustRel(t, src, p))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dirMode{target, info.Mode().Perm()})
			return os.MkdirAll(target, 0o700)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, data, 0o600); err != nil {
				return err
			}
			return os.Chmod(target, info.Mode().Perm())
		default:
			return fmt.Errorf("%s: not a regular file or directory", p)
		}
	})
	if err != nil {
		t.Fatalf("copying %s to %s: %v", src, dst, err)
	}
	// Directory modes last, deepest first, so that a read-only directory
	// does not stop the copy.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i].path, dirs[i].mode); err != nil {
			t.Fatal(err)
		}
	}
}

func mustRel(t testing.TB, base, p string) string {
	t.Helper()
	rel, err := filepath.Rel(base, p)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// ---------------------------------------------------------------------------
// The visible tree of an unpacked mirror

// readUnpackedView describes everything clients can see below site, that is
// all of it but site/.tfmirror: each path (slash-separated, relative) maps
// to "dir <mode>", "file <mode> <sha256>" or "other <type>".
func readUnpackedView(t testing.TB, site string) map[string]string {
	t.Helper()
	view := map[string]string{}
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(mustRel(t, site, p))
		if rel == "." {
			return nil
		}
		if rel == ".tfmirror" && d.IsDir() {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			view[rel] = fmt.Sprintf("dir %v", info.Mode().Perm())
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			view[rel] = fmt.Sprintf("file %v %s", info.Mode().Perm(), sha256Hex(data))
		default:
			view[rel] = "other " + d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the visible tree of %s: %v", site, err)
	}
	return view
}

func pathDepth(rel string) int { return strings.Count(rel, "/") + 1 }

// viewPackages returns the package directories of a view (the directories
// at <host>/<namespace>/<type>/<version>/<os_arch>).
func viewPackages(view map[string]string) []string {
	var pkgs []string
	for rel, what := range view {
		if pathDepth(rel) == unpackedPackageDepth && strings.HasPrefix(what, "dir ") {
			pkgs = append(pkgs, rel)
		}
	}
	slices.Sort(pkgs)
	return pkgs
}

// packageFiles lists the paths of a view below the package directory pkg.
func packageFiles(view map[string]string, pkg string) []string {
	var files []string
	for rel, what := range view {
		if strings.HasPrefix(rel, pkg+"/") {
			files = append(files, strings.TrimPrefix(rel, pkg+"/")+" ("+what+")")
		}
	}
	slices.Sort(files)
	return files
}

// dirH1 is the h1 of an unpacked package directory, as tofu computes it.
func dirH1(dir string) (string, error) {
	return dirhash.HashDir(dir, "", dirhash.Hash1)
}

// storeH1 returns the h1 that the provenance record in site's store holds
// for the package directory pkg of the view.
func storeH1(site, pkg string) (string, error) {
	parts := strings.Split(pkg, "/")
	if len(parts) != unpackedPackageDepth {
		return "", fmt.Errorf("%s is not a package directory", pkg)
	}
	host, ns, typ, version, plat := parts[0], parts[1], parts[2], parts[3], parts[4]
	storeHost, ok := unpackedStoreHosts[host]
	if !ok {
		return "", fmt.Errorf("no store directory known for host %q", host)
	}
	rec := filepath.Join(site, ".tfmirror", "store", storeHost, ns, typ,
		fmt.Sprintf("terraform-provider-%s_%s_provenance.json", typ, version))
	data, err := os.ReadFile(rec)
	if err != nil {
		return "", fmt.Errorf("the store's provenance record: %w", err)
	}
	var prov struct {
		Archives map[string]struct {
			H1 string `json:"h1"`
		} `json:"archives"`
	}
	if err := json.Unmarshal(data, &prov); err != nil {
		return "", fmt.Errorf("%s: %w (content %q)", rec, err, truncate(data))
	}
	a, ok := prov.Archives[plat]
	if !ok || !strings.HasPrefix(a.H1, "h1:") {
		return "", fmt.Errorf("%s has no h1 for %s (content %q)", rec, plat, truncate(data))
	}
	return a.H1, nil
}

// unpackedBaseline is an unpacked tree before a build: its view and the h1
// of each of its package directories.
type unpackedBaseline struct {
	view map[string]string
	h1   map[string]string
}

func readUnpackedBaseline(t testing.TB, site string) unpackedBaseline {
	t.Helper()
	b := unpackedBaseline{view: readUnpackedView(t, site), h1: map[string]string{}}
	for _, pkg := range viewPackages(b.view) {
		h, err := dirH1(filepath.Join(site, filepath.FromSlash(pkg)))
		if err != nil {
			t.Fatal(err)
		}
		b.h1[pkg] = h
	}
	return b
}

// unpackedCheck counts what checkUnpackedTree found.
type unpackedCheck struct {
	newContent, oldContent int // package directories with the store's content, with their content from before the build
	staged                 int // entries left in the unpack areas of the store's workspace
}

// checkUnpackedTree checks the visible tree of an unpacked mirror that a
// killed (or frozen) build left, against the tree before the build and
// the tree an uninterrupted build makes (final):
//
//  1. every package directory visible is complete: its h1 is the one the
//     store's provenance record holds for it, or, for a package directory
//     that existed before the build, the one it had then; and every package
//     directory that existed before the build is still there;
//  2. nothing else is visible: below OUT, outside OUT/.tfmirror, there are
//     only the directories <host>/<namespace>/<type>/<version>/<os_arch>
//     (or a part of that path) of packages of the final tree, and the files
//     of those packages (which 1 checks by their h1).
func checkUnpackedTree(t testing.TB, site string, before unpackedBaseline, final map[string]string) unpackedCheck {
	t.Helper()
	now := readUnpackedView(t, site)
	var errs []string
	var res unpackedCheck

	// 2: the structure, and nothing else.
	for rel, what := range now {
		if pathDepth(rel) > unpackedPackageDepth {
			continue // inside a package directory: checked by its h1
		}
		want, inFinal := final[rel]
		if !inFinal {
			want = before.view[rel]
		}
		switch {
		case !strings.HasPrefix(want, "dir "):
			errs = append(errs, fmt.Sprintf("%s (%s): visible, but neither an uninterrupted build nor the tree before the build has such a directory: a leftover?", rel, what))
		case !strings.HasPrefix(what, "dir "):
			errs = append(errs, fmt.Sprintf("%s is %s, not a directory", rel, what))
		}
	}

	// 1: every package directory complete.
	for _, pkg := range viewPackages(now) {
		if !strings.HasPrefix(final[pkg], "dir ") && !strings.HasPrefix(before.view[pkg], "dir ") {
			continue // reported above
		}
		got, err := dirH1(filepath.Join(site, filepath.FromSlash(pkg)))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: hashing the package directory: %v", pkg, err))
			continue
		}
		want, werr := storeH1(site, pkg)
		old, existed := before.h1[pkg]
		switch {
		case werr == nil && got == want:
			res.newContent++
		case existed && got == old:
			res.oldContent++
		default:
			msg := fmt.Sprintf("%s: visible with h1 %s, ", pkg, got)
			if werr != nil {
				msg += fmt.Sprintf("and the store records none (%v)", werr)
			} else {
				msg += "the store records " + want
			}
			if existed {
				msg += ", before the build it was " + old
			}
			msg += fmt.Sprintf(": a partial or mixed package?\n    it holds: %q\n    an uninterrupted build's holds: %q",
				packageFiles(now, pkg), packageFiles(final, pkg))
			errs = append(errs, msg)
		}
	}
	for pkg := range before.h1 {
		if _, ok := now[pkg]; !ok {
			errs = append(errs, pkg+": a package directory that existed before the build is gone (RENAME_EXCHANGE keeps one in place)")
		}
	}

	areas, _ := filepath.Glob(filepath.Join(storeWorkspace(site), "run-*", "unpack"))
	for _, area := range areas {
		if entries, err := os.ReadDir(area); err == nil {
			res.staged += len(entries)
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		t.Fatalf("the unpacked tree after the kill is inconsistent:\n%s\nvisible tree:\n%s\nstore's workspace:\n%s",
			strings.Join(errs, "\n"), describeView(now), describeTree(t, storeWorkspace(site)))
	}
	return res
}

// storeWorkspace is the workspace of the network tree behind a
// filesystem mirror: the unpack area of each run in it (run-*/unpack) is
// where a build extracts packages before they appear.
func storeWorkspace(site string) string {
	return filepath.Join(site, ".tfmirror", "store", ".tfmirror")
}

func describeView(view map[string]string) string {
	lines := make([]string, 0, len(view))
	for rel, what := range view {
		if len(what) > 40 {
			what = what[:40] + "…"
		}
		lines = append(lines, "  "+rel+": "+what)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// diffViews describes how two views differ ("" if equal).
func diffViews(want, got map[string]string) string {
	var lines []string
	for rel, w := range want {
		if g, ok := got[rel]; !ok {
			lines = append(lines, "missing: "+rel)
		} else if g != w {
			lines = append(lines, fmt.Sprintf("differs: %s (%s, want %s)", rel, g, w))
		}
	}
	for rel, g := range got {
		if _, ok := want[rel]; !ok {
			lines = append(lines, fmt.Sprintf("extra:   %s (%s)", rel, g))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// checkUnpackArea requires that no run, and so no unpack area, is left
// in the store's workspace (nor the shared unpack area of older
// versions).
func checkUnpackArea(t testing.TB, site string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(storeWorkspace(site), "run-*"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(storeWorkspace(site), "unpack")); err == nil {
		left = append(left, "unpack")
	}
	if len(left) > 0 {
		t.Fatalf("after a complete build, %s still holds %v:\n%s", storeWorkspace(site), left, describeTree(t, storeWorkspace(site)))
	}
}

// ---------------------------------------------------------------------------

// TestUnpackedBuildSurvivesSIGKILL kills `tfmirror build --layout unpacked`
// at several points (after N file events in the visible tree, after a
// random time), each over a copy of the same previously built tree, two of
// whose packages were damaged so that the build replaces them (the
// RENAME_EXCHANGE path). After each kill, every visible package directory
// must be complete (the h1 the store records, or its old content), nothing
// but packages and their directories may be visible, and a rerun must
// complete with exactly the tree an uninterrupted build gives and an empty
// unpack area. Last, one build is frozen with SIGSTOP at each file event
// and its tree checked each time.
func TestUnpackedBuildSurvivesSIGKILL(t *testing.T) {
	c := newUnpackedCrashRegistry(t)
	// Materialization, which this test is about, comes after the downloads:
	// there is no need to slow them down.
	c.reg.SetArchiveDelay(0)

	// A previously built tree: alpha and delta 1.0.0 for two platforms.
	baseSite := filepath.Join(t.TempDir(), "base")
	buildUnpacked(t, c, "unpacked-partial.hcl", baseSite)
	if got := verifySite(t, c.work, c.env, filepath.Join(baseSite, ".tfmirror", "store")); got.Providers != 2 || got.Versions != 2 || got.Archives != 4 {
		t.Fatalf("the partial build's store: verify counted %d providers, %d versions, %d archives; want 2, 2, 4", got.Providers, got.Versions, got.Archives)
	}
	// Two of its packages damaged: the build must replace them, one file
	// changed in one, one file gone from the other.
	damaged := []string{
		"registry.opentofu.org/hashicorp/alpha/1.0.0/linux_amd64",
		unpackedIDNHost + "/acme/delta/1.0.0/darwin_arm64",
	}
	{
		bin := filepath.Join(baseSite, filepath.FromSlash(damaged[0]), "terraform-provider-alpha_v1.0.0")
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(baseSite, filepath.FromSlash(damaged[1]), "junk-0000003.txt")); err != nil {
			t.Fatal(err)
		}
	}
	base := readUnpackedBaseline(t, baseSite)
	if pkgs := viewPackages(base.view); len(pkgs) != 4 {
		t.Fatalf("the partial build made package directories %q, want 4\n%s", pkgs, describeView(base.view))
	}
	for _, pkg := range damaged {
		if want, err := storeH1(baseSite, pkg); err != nil || base.h1[pkg] == want {
			t.Fatalf("%s: damaging it did not change its h1 %s (store: %s, %v)", pkg, base.h1[pkg], want, err)
		}
	}

	newSite := func(t *testing.T) string {
		t.Helper()
		site := filepath.Join(t.TempDir(), "site")
		copyTreeKeepModes(t, baseSite, site)
		return site
	}

	// The uninterrupted build over that tree: its tree, how long it takes,
	// how many file events it makes in the visible tree.
	var final map[string]string
	var runTime time.Duration
	var runEvents, published int
	{
		site := newSite(t)
		p := startUnpackedBuild(t, c, site)
		stop := make(chan struct{})
		events := watchEvents(site, stop, nil)
		code, _ := p.wait(t)
		close(stop)
		runEvents = <-events
		runTime = p.ended.Sub(p.started)
		if code != 0 {
			t.Fatalf("uninterrupted build: exit %d", code)
		}
		res := verifySite(t, c.work, c.env, filepath.Join(site, ".tfmirror", "store"))
		if res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
			t.Fatalf("uninterrupted build's store: verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
		}
		final = readUnpackedView(t, site)
		pkgs := viewPackages(final)
		if len(pkgs) != 18 {
			t.Fatalf("uninterrupted build: package directories %q, want 18\n%s", pkgs, describeView(final))
		}
		for _, pkg := range pkgs {
			if !strings.HasPrefix(pkg, "registry.opentofu.org/") && !strings.HasPrefix(pkg, unpackedIDNHost+"/") {
				t.Fatalf("uninterrupted build: package directory %s on an unexpected host", pkg)
			}
			if base.h1[pkg] == "" || slices.Contains(damaged, pkg) {
				published++
			}
		}
		chk := checkUnpackedTree(t, site, base, final)
		if chk.newContent != 18 || chk.oldContent != 0 {
			t.Fatalf("uninterrupted build: %d package directories with the store's h1 and %d with an old one, want 18 and 0", chk.newContent, chk.oldContent)
		}
		checkReadable(t, filepath.Join(site, "registry.opentofu.org"))
		checkReadable(t, filepath.Join(site, unpackedIDNHost))
		checkNoLeftovers(t, site)
		checkUnpackArea(t, site)
		t.Logf("uninterrupted build: %v, %d packages published, %d file events seen", runTime.Round(time.Millisecond), published, runEvents)
	}

	// crashRun runs one crash build over a copy of the base tree; arm
	// arranges its kill. It checks the tree left behind, reruns the build
	// to completion and checks the result. It reports whether the kill
	// happened before the build ended.
	crashRun := func(t *testing.T, arm func(p *tfmirrorProc, site string) (disarm func())) bool {
		site := newSite(t)
		p := startUnpackedBuild(t, c, site)
		disarm := arm(p, site)
		code, killed := p.wait(t)
		disarm()
		if !killed {
			if code != 0 {
				t.Fatalf("build (not killed): exit %d, want 0", code)
			}
			t.Logf("the build completed before the kill point")
		}

		chk := checkUnpackedTree(t, site, base, final)
		t.Logf("after the kill: %d package directories with the store's content, %d with their old content; %d entries in the unpack area",
			chk.newContent, chk.oldContent, chk.staged)
		verifySite(t, c.work, c.env, filepath.Join(site, ".tfmirror", "store"))

		// The same build again; it must not wait for the dead build's lock.
		buildUnpacked(t, c, "unpacked-full.hcl", site, "--parallel", crashParallel, "--lock-timeout", "0")
		if d := diffViews(final, readUnpackedView(t, site)); d != "" {
			t.Fatalf("rerun after the kill: the visible tree differs from an uninterrupted build's:\n%s\nvisible tree:\n%s", d, describeView(readUnpackedView(t, site)))
		}
		checkUnpackArea(t, site)
		checkNoLeftovers(t, site)
		verifySite(t, c.work, c.env, filepath.Join(site, ".tfmirror", "store"))
		return killed
	}

	// (a) After N file events in the visible tree: before, between and
	// after the publications of packages. (b) After a random time, from
	// the start of the process to the end of an uninterrupted build.
	run := func(t *testing.T, arm armFunc) bool { return crashRun(t, arm) }
	t.Run("files", func(t *testing.T) { killAtEvents(t, 6, runEvents, run) })
	t.Run("random", func(t *testing.T) { killAtRandomTimes(t, 3, runTime, run) })

	// (c) At every file event of one build: SIGSTOP leaves the tree as
	// SIGKILL would at that moment; guarantees 1 and 2 must hold; then
	// SIGCONT.
	t.Run("every event", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("reads the process state from /proc")
		}
		site := newSite(t)
		p := startUnpackedBuild(t, c, site)
		seen := fileState(site)
		freezes, withNew := 0, 0
	poll:
		for {
			select {
			case <-p.done:
				break poll
			case <-time.After(200 * time.Microsecond):
			}
			changed := false
			for k := range fileState(site) {
				if !seen[k] {
					changed = true
					break
				}
			}
			if !changed || !p.freeze(t) {
				continue
			}
			for k := range fileState(site) {
				seen[k] = true
			}
			chk := checkUnpackedTree(t, site, base, final)
			freezes++
			if chk.newContent > withNew {
				withNew = chk.newContent
			}
			p.thaw()
		}
		if code, _ := p.wait(t); code != 0 {
			t.Fatalf("build frozen %d times: exit %d, want 0", freezes, code)
		}
		t.Logf("the build was frozen and its tree checked at %d file events (up to %d packages with the store's content)", freezes, withNew)
		if d := diffViews(final, readUnpackedView(t, site)); d != "" {
			t.Fatalf("the visible tree differs from an uninterrupted build's:\n%s", d)
		}
		checkUnpackArea(t, site)
		checkNoLeftovers(t, site)
		// Each package appears with one rename, so most publications must
		// be caught one by one, or this part tests little.
		if freezes < published/2 {
			t.Errorf("only %d freezes for the %d packages an uninterrupted build publishes", freezes, published)
		}
	})
}

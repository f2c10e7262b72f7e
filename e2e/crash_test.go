package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// The crash tests mirror three providers × two versions × three platforms
// of archives big enough to interrupt, served slowly.
const (
	crashArchiveSize  = 1<<20 + 4321
	crashArchiveDelay = 2 * time.Millisecond // between 16 KiB chunks
	// crashParallel spreads a build's releases over time, so that kill
	// points land between the publications of different releases.
	crashParallel = "2"
)

var (
	crashProviders = []string{"alpha", "beta", "gamma"}
	crashVersions  = []string{"1.0.0", "1.1.0"}
)

// crashRegistry is a fake registry publishing the crash tests' providers,
// and manifests for it in work.
type crashRegistry struct {
	ca   *testca.CA
	reg  *fakeregistry.Registry
	env  []string
	work string // holds partial.hcl and full.hcl

	served atomic.Int64                // archive bytes the registry has served so far
	hook   atomic.Pointer[func(int64)] // the running build's OnBytes hook, if any
}

func newCrashRegistry(t *testing.T) *crashRegistry {
	t.Helper()
	c := &crashRegistry{ca: testca.New(t), work: t.TempDir()}
	c.reg = fakeregistry.New(t, c.ca)
	for _, typ := range crashProviders {
		for _, v := range crashVersions {
			c.reg.AddWithSize("hashicorp", typ, v, crashArchiveSize, threePlatforms...)
		}
	}
	c.reg.OnBytes(func(total int64) {
		for {
			old := c.served.Load()
			if total <= old || c.served.CompareAndSwap(old, total) {
				break
			}
		}
		if h := c.hook.Load(); h != nil {
			(*h)(total)
		}
	})
	c.env = caFileEnv(t, c.ca)

	hostBlock := fmt.Sprintf("\nhost \"registry.opentofu.org\" {\n  services = { \"providers.v1\" = %q }\n}\n", c.reg.ServicesURL)
	// partial.hcl: one version of two of the providers, two platforms.
	writeFile(t, filepath.Join(c.work, "partial.hcl"), `platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/alpha" {
  versions = "1.0.0"
}

provider "hashicorp/beta" {
  versions = "1.0.0"
}
`+hostBlock)
	// full.hcl: everything. Over a partial tree it adds platforms to
	// existing versions, versions to existing providers, and a provider.
	writeFile(t, filepath.Join(c.work, "full.hcl"), `platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/alpha" {
  versions = ">= 1.0.0"
}

provider "hashicorp/beta" {
  versions = ">= 1.0.0"
}

provider "hashicorp/gamma" {
  versions = ">= 1.0.0"
}
`+hostBlock)
	return c
}

// onBytes installs the hook called with the registry's running total of
// archive bytes (nil removes it).
func (c *crashRegistry) onBytes(h func(total int64)) {
	if h == nil {
		c.hook.Store(nil)
		return
	}
	c.hook.Store(&h)
}

// build runs `tfmirror build --config manifest --out site` to completion
// at full speed and requires success.
func (c *crashRegistry) build(t *testing.T, manifest, site string, extra ...string) {
	t.Helper()
	c.reg.SetArchiveDelay(0)
	args := append([]string{"build", "--config", manifest, "--out", site}, extra...)
	stdout, stderr, code := runTfmirror(t, c.work, c.env, args...)
	if code != 0 {
		t.Fatalf("tfmirror %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
}

// startCrashBuild starts the full build into site with the archive delay
// on, as a process the test may kill.
func (c *crashRegistry) startCrashBuild(t *testing.T, site string) *tfmirrorProc {
	t.Helper()
	c.reg.SetArchiveDelay(crashArchiveDelay)
	return startTfmirror(t, c.work, c.env, "build", "--config", "full.hcl", "--out", site, "--parallel", crashParallel, "--lock-timeout", "0")
}

// killAfterBytes runs the crash build into site and kills it once the
// registry has served n more archive bytes; the kill must land. It returns
// the registry's byte count when the build started.
func (c *crashRegistry) killAfterBytes(t *testing.T, site string, n int64) (start int64) {
	t.Helper()
	start = c.served.Load()
	p := c.startCrashBuild(t, site)
	c.onBytes(func(total int64) {
		if total-start >= n {
			p.kill()
		}
	})
	code, killed := p.wait(t)
	c.onBytes(nil)
	if !killed {
		t.Fatalf("the build was not killed after %d archive bytes (exit %d)", n, code)
	}
	return start
}

// ---------------------------------------------------------------------------
// tfmirror as a process the test can kill

type tfmirrorProc struct {
	args    []string
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	started time.Time

	killOnce sync.Once
	killSent atomic.Bool
	done     chan struct{}
	ended    time.Time
	waitErr  error
}

// startTfmirror starts the tfmirror binary in dir with args, in the same
// clean environment as runTfmirror. The process is killed at the end of the
// test if it is still running.
func startTfmirror(t testing.TB, dir string, env []string, args ...string) *tfmirrorProc {
	t.Helper()
	if tfmirrorBin == "" {
		t.Fatal("tfmirror binary not built (TestMain did not run?)")
	}
	home := t.TempDir()
	p := &tfmirrorProc{args: args, done: make(chan struct{})}
	p.cmd = exec.Command(tfmirrorBin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = mergeEnv(baseEnv(), []string{
		"HOME=" + home,
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
	}, env)
	p.cmd.Stdout = &p.stdout
	p.cmd.Stderr = &p.stderr
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting tfmirror %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.ended = time.Now()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitUntil waits up to a minute for cond while the process runs; the
// test fails, saying that what did not happen, if the process ends first
// or the minute passes.
func (p *tfmirrorProc) waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		select {
		case <-p.done:
			p.wait(t)
			t.Fatalf("tfmirror ended before %s", what)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("within a minute, not %s\n%s%s", what, p.stdout.String(), p.stderr.String())
		}
	}
}

// kill sends SIGKILL once.
func (p *tfmirrorProc) kill() {
	p.killOnce.Do(func() {
		p.killSent.Store(true)
		_ = p.cmd.Process.Kill()
	})
}

// wait waits for the process (killing it after 2 minutes) and returns its
// exit code, or -1 and killed=true when SIGKILL ended it.
func (p *tfmirrorProc) wait(t testing.TB) (code int, killed bool) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(2 * time.Minute):
		p.kill()
		<-p.done
		t.Fatalf("tfmirror %s did not end within 2 minutes\nstdout:\n%s\nstderr:\n%s", strings.Join(p.args, " "), p.stdout.String(), p.stderr.String())
	}
	var exitErr *exec.ExitError
	switch {
	case p.waitErr == nil:
		code = 0
	case errors.As(p.waitErr, &exitErr):
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() != syscall.SIGKILL {
				t.Fatalf("tfmirror %s ended by signal %v", strings.Join(p.args, " "), ws.Signal())
			}
			killed = true
		}
	default:
		t.Fatalf("waiting for tfmirror %s: %v", strings.Join(p.args, " "), p.waitErr)
	}
	t.Logf("$ tfmirror %s  (exit %d, killed %v, %v)\n--- stdout:\n%s\n--- stderr:\n%s",
		strings.Join(p.args, " "), code, killed, p.ended.Sub(p.started).Round(time.Millisecond), p.stdout.String(), p.stderr.String())
	return code, killed
}

// ---------------------------------------------------------------------------
// Checking trees

// verifyResult is the output of `tfmirror verify --json`.
type verifyResult struct {
	Providers int `json:"providers"`
	Versions  int `json:"versions"`
	Archives  int `json:"archives"`
	Problems  []struct {
		Path    string `json:"path"`
		Message string `json:"message"`
	} `json:"problems"`
	Warnings []struct {
		Path    string `json:"path"`
		Message string `json:"message"`
	} `json:"warnings"`
}

// verifySite runs `tfmirror verify --json site` and requires exit 0, no
// problem and no warning; or, where a build was killed before it
// published anything, verify's exit 2 for a location that holds no
// mirror yet (nothing is half-visible there: there is nothing).
func verifySite(t testing.TB, dir string, env []string, site string) verifyResult {
	t.Helper()
	stdout, stderr, code := runTfmirror(t, dir, env, "verify", "--json", site)
	var res verifyResult
	if err := json.Unmarshal(summaryOf(stdout), &res); err != nil {
		t.Fatalf("tfmirror verify --json %s: exit %d, output is not JSON (%v):\n%s\nstderr:\n%s", site, code, err, stdout, stderr)
	}
	if code == 2 && strings.Contains(stderr, " holds no mirror: ") {
		return res
	}
	if code != 0 || len(res.Problems) > 0 || len(res.Warnings) > 0 {
		t.Fatalf("tfmirror verify %s: exit %d, want 0 with no problem or warning:\n%s\nstderr:\n%s\ntree:\n%s",
			site, code, stdout, stderr, describeTree(t, site))
	}
	return res
}

// describeTree lists every file below site (leftovers included) with its
// size, for failure messages.
func describeTree(t testing.TB, site string) string {
	t.Helper()
	var lines []string
	_ = filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(site, p)
		size := int64(-1)
		if info, err := d.Info(); err == nil {
			size = info.Size()
		}
		lines = append(lines, fmt.Sprintf("  %s (%d bytes)", filepath.ToSlash(rel), size))
		return nil
	})
	return strings.Join(lines, "\n")
}

func isTempFile(rel string) bool { return strings.HasPrefix(path.Base(rel), ".tfmirror-tmp-") }

// isMetadataDoc reports whether a published file is one of the JSON
// documents that a build may extend: index.json, <version>.json,
// catalog.json and provenance records. Everything else (archives, kept
// SHA256SUMS and signatures) never changes once published.
func isMetadataDoc(rel string) bool {
	return strings.HasSuffix(rel, ".json") && !strings.HasSuffix(rel, layout.SBOMSuffix)
}

// docEntries flattens a metadata document into what it lists, each with
// its JSON value: "versions/1.0.0" of an index.json, "archives/<platform>"
// of a <version>.json or provenance record, "providers/<addr>" of
// catalog.json (whose description of each provider, its signers and
// warnings, is derived from the tree and may change either way, so lists
// nothing). A document with any other shape is an error.
func docEntries(rel string, data []byte) (map[string]string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s does not parse: %w (content %q)", rel, err, truncate(data))
	}
	out := map[string]string{}
	object := func(key string, required bool) error {
		raw, ok := top[key]
		if !ok {
			if required {
				return fmt.Errorf("%s has no %q (content %q)", rel, key, truncate(data))
			}
			return nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil || m == nil {
			return fmt.Errorf("%s: %q is not an object (content %q)", rel, key, truncate(data))
		}
		for k, v := range m {
			var buf bytes.Buffer
			if err := json.Compact(&buf, v); err != nil {
				return err
			}
			out[key+"/"+k] = buf.String()
		}
		return nil
	}
	base := path.Base(rel)
	var allowed []string
	switch {
	case rel == "catalog.json":
		allowed = []string{"providers", "signers", "deprecations"}
		var c struct {
			Providers []string `json:"providers"`
		}
		if err := json.Unmarshal(data, &c); err != nil || c.Providers == nil {
			return nil, fmt.Errorf("%s: no providers list (content %q)", rel, truncate(data))
		}
		if !slices.IsSorted(c.Providers) {
			return nil, fmt.Errorf("%s: providers not sorted: %q", rel, c.Providers)
		}
		for _, p := range c.Providers {
			out["providers/"+p] = ""
		}
	case base == "warnings.json":
		allowed = []string{"warnings"}
	case base == "index.json":
		allowed = []string{"versions"}
		if err := object("versions", true); err != nil {
			return nil, err
		}
	case strings.HasSuffix(base, "_provenance.json"):
		allowed = []string{"archives", "key_id", "fingerprint", "key_created", "key_expires", "signing_keys"}
		if err := object("archives", true); err != nil {
			return nil, err
		}
		for _, k := range allowed[1:] {
			if raw, ok := top[k]; ok {
				out[k] = string(raw)
			}
		}
	default: // <version>.json
		allowed = []string{"archives"}
		if err := object("archives", true); err != nil {
			return nil, err
		}
	}
	for k := range top {
		if !slices.Contains(allowed, k) {
			return nil, fmt.Errorf("%s: unexpected member %q", rel, k)
		}
	}
	return out, nil
}

func truncate(b []byte) []byte {
	if len(b) > 300 {
		return append(b[:300:300], "..."...)
	}
	return b
}

// entriesWithin returns what of small is not in big with the same value.
func entriesWithin(small, big map[string]string) []string {
	var missing []string
	for k, v := range small {
		if bv, ok := big[k]; !ok {
			missing = append(missing, k+" (missing)")
		} else if bv != v {
			missing = append(missing, fmt.Sprintf("%s (was %s, now %s)", k, v, bv))
		}
	}
	slices.Sort(missing)
	return missing
}

// siteState is a tree's files: hashes, and the content of its metadata
// documents.
type siteState struct {
	hashes map[string]string
	docs   map[string][]byte
}

func readSiteState(t testing.TB, site string) siteState {
	t.Helper()
	s := siteState{hashes: treeHashes(t, site), docs: map[string][]byte{}}
	for rel := range s.hashes {
		if isMetadataDoc(rel) && !isTempFile(rel) {
			data, err := os.ReadFile(filepath.Join(site, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			s.docs[rel] = data
		}
	}
	return s
}

// checkCrashedTree checks a tree that a killed build left behind, against
// the tree before the build (before) and the tree an uninterrupted build
// makes (final):
//   - every file of before is still there, byte for byte, except metadata
//     documents, which may only have grown: everything they listed is still
//     listed, with the same value;
//   - every file at a published path (not a .tfmirror-tmp-* leftover, not under
//     .tfmirror) is one the final tree has: archives, SHA256SUMS and
//     signatures byte for byte, metadata documents parsing and listing only
//     what the final one lists, with the same values.
//
// It returns the number of leftover temporary files outside .tfmirror.
// completePage reports a catalog page that is not a whole HTML page.
func completePage(site, rel string) []string {
	data, err := os.ReadFile(filepath.Join(site, rel))
	if err != nil || !bytes.HasSuffix(bytes.TrimSpace(data), []byte("</html>")) {
		return []string{fmt.Sprintf("%s: not a complete page (%v)", rel, err)}
	}
	return nil
}

func checkCrashedTree(t testing.TB, site string, before, final siteState) (leftovers int) {
	t.Helper()
	now := readSiteState(t, site)
	var errs []string
	for rel, h := range before.hashes {
		cur, ok := now.hashes[rel]
		switch {
		case !ok:
			errs = append(errs, rel+": was published before the build and is gone")
		case cur == h:
		case rel == "index.html":
			errs = append(errs, completePage(site, rel)...)
		case !isMetadataDoc(rel):
			errs = append(errs, rel+": was published before the build and changed")
		default:
			was, err := docEntries(rel, before.docs[rel])
			if err != nil {
				t.Fatalf("the tree before the crash: %v", err)
			}
			is, err := docEntries(rel, now.docs[rel])
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			if lost := entriesWithin(was, is); len(lost) > 0 {
				errs = append(errs, fmt.Sprintf("%s no longer lists what it listed before the build: %s\ncontent now: %s",
					rel, strings.Join(lost, ", "), truncate(now.docs[rel])))
			}
		}
	}
	for rel, h := range now.hashes {
		if isTempFile(rel) {
			leftovers++
			continue
		}
		want, ok := final.hashes[rel]
		switch {
		case !ok:
			errs = append(errs, rel+": published, but an uninterrupted build has no such file")
		case h == want:
		case rel == "index.html":
			// A view of the tree, written whole after a build: a killed
			// build leaves the one before it.
			errs = append(errs, completePage(site, rel)...)
		case !isMetadataDoc(rel):
			errs = append(errs, fmt.Sprintf("%s: published with content (sha256 %s) other than an uninterrupted build's (%s): a half-written file?", rel, h, want))
		default:
			is, err := docEntries(rel, now.docs[rel])
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			all, err := docEntries(rel, final.docs[rel])
			if err != nil {
				t.Fatalf("the uninterrupted build's tree: %v", err)
			}
			if extra := entriesWithin(is, all); len(extra) > 0 {
				errs = append(errs, fmt.Sprintf("%s lists what an uninterrupted build does not: %s\ncontent: %s",
					rel, strings.Join(extra, ", "), truncate(now.docs[rel])))
			}
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		t.Fatalf("the tree after the kill is inconsistent:\n%s\ntree:\n%s", strings.Join(errs, "\n"), describeTree(t, site))
	}
	return leftovers
}

// checkNoLeftovers requires that no staging area (a workspace's run, or
// the shared staging area of older versions) and no .tfmirror-tmp-* file
// is left anywhere below site, .tfmirror included.
func checkNoLeftovers(t testing.TB, site string) {
	t.Helper()
	var left []string
	err := filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(site, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, ".tfmirror/run-") || !d.IsDir() && (strings.HasPrefix(rel, ".tfmirror/staging/") || isTempFile(rel)) {
			left = append(left, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("leftovers after a complete build: %q\ntree:\n%s", left, describeTree(t, site))
	}
}

// fileState identifies every file below site (outside .tfmirror) by path
// and inode, so that both a new file and an atomic replacement (a rename
// over an existing file) show as a new entry.
func fileState(site string) map[string]bool {
	state := map[string]bool{}
	_ = filepath.WalkDir(site, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // files come and go while the build runs
		}
		if d.IsDir() {
			if d.Name() == ".tfmirror" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed or renamed meanwhile
		}
		var ino uint64
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		rel, _ := filepath.Rel(site, p)
		state[fmt.Sprintf("%s@%d", filepath.ToSlash(rel), ino)] = true
		return nil
	})
	return state
}

// watchEvents polls site until stop is closed, calling onCount with the
// number of file events seen so far (files created, temporary files of
// atomic writes included, and files replaced) after each poll. It sends
// the final count.
func watchEvents(site string, stop <-chan struct{}, onCount func(int)) <-chan int {
	initial := fileState(site)
	res := make(chan int, 1)
	go func() {
		seen := map[string]bool{}
		poll := func() int {
			for k := range fileState(site) {
				if !initial[k] {
					seen[k] = true
				}
			}
			return len(seen)
		}
		for {
			n := poll()
			if onCount != nil {
				onCount(n)
			}
			select {
			case <-stop:
				res <- poll()
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return res
}

// freeze stops the process with SIGSTOP and waits until it is stopped. It
// reports false if the process ended first. A stopped process has left the
// tree exactly as SIGKILL at that moment would.
func (p *tfmirrorProc) freeze(t testing.TB) bool {
	t.Helper()
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return false
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-p.done:
			return false
		default:
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			select {
			case <-p.done: // ended and reaped meanwhile
				return false
			case <-time.After(time.Second):
				t.Fatalf("reading the state of process %d: %v", pid, err)
			}
		}
		// "pid (comm) STATE ...": comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) {
			switch stat[i+2] {
			case 'T', 't':
				return true
			case 'Z', 'X':
				return false
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not stop after SIGSTOP: %s", pid, stat)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func (p *tfmirrorProc) thaw() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }

// ---------------------------------------------------------------------------

// TestBuildSurvivesSIGKILL kills `tfmirror build` at many points (after N
// archive bytes, after N file events in the tree, after a random time),
// each over a copy of the same previously published tree. After each kill,
// the tree must verify and keep everything it published before, and a
// rerun must complete, remove the leftovers and give exactly the tree an
// uninterrupted build gives. Last, one build is frozen with SIGSTOP at
// every file event it makes, and the tree checked each time.
func TestBuildSurvivesSIGKILL(t *testing.T) {
	c := newCrashRegistry(t)

	// A previously published tree: one version of two providers.
	baseSite := filepath.Join(t.TempDir(), "base")
	c.build(t, "partial.hcl", baseSite)
	base := readSiteState(t, baseSite)
	if got := verifySite(t, c.work, c.env, baseSite); got.Providers != 2 || got.Versions != 2 || got.Archives != 4 {
		t.Fatalf("the partial build: verify counted %d providers, %d versions, %d archives; want 2, 2, 4", got.Providers, got.Versions, got.Archives)
	}

	newSite := func(t *testing.T) string {
		t.Helper()
		site := filepath.Join(t.TempDir(), "site")
		copyTree(t, baseSite, site)
		return site
	}

	// The uninterrupted build over that tree, at crash-test speed: what it
	// downloads, how long it takes, how many file events it makes.
	var final siteState
	var runBytes int64
	var runTime time.Duration
	var runEvents int
	{
		site := newSite(t)
		start := c.served.Load()
		p := c.startCrashBuild(t, site)
		stop := make(chan struct{})
		events := watchEvents(site, stop, nil)
		code, _ := p.wait(t)
		close(stop)
		runEvents = <-events
		runBytes, runTime = c.served.Load()-start, p.ended.Sub(p.started)
		if code != 0 {
			t.Fatalf("uninterrupted build: exit %d", code)
		}
		res := verifySite(t, c.work, c.env, site)
		if res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
			t.Fatalf("uninterrupted build: verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
		}
		checkFullSelection(t, site)
		checkNoLeftovers(t, site)
		final = readSiteState(t, site)
		checkCrashedTree(t, site, base, final) // a complete build, too, only grows the tree
		if want := int64(14 * crashArchiveSize); runBytes != want {
			t.Fatalf("uninterrupted build downloaded %d archive bytes, want %d (14 archives)", runBytes, want)
		}
		t.Logf("uninterrupted build: %d archive bytes in %v, %d file events seen", runBytes, runTime.Round(time.Millisecond), runEvents)
	}

	// crashRun runs one crash build over a copy of the base tree; arm
	// arranges its kill. It checks the tree left behind, reruns the build
	// to completion and checks the result. It reports whether the kill
	// happened before the build ended.
	crashRun := func(t *testing.T, arm func(p *tfmirrorProc, site string, start int64) (disarm func())) bool {
		site := newSite(t)
		start := c.served.Load()
		p := c.startCrashBuild(t, site)
		disarm := arm(p, site, start)
		code, killed := p.wait(t)
		disarm()
		if !killed {
			if code != 0 {
				t.Fatalf("build (not killed): exit %d, want 0", code)
			}
			t.Logf("the build completed before the kill point")
		}

		res := verifySite(t, c.work, c.env, site)
		leftovers := checkCrashedTree(t, site, base, final)
		t.Logf("after the kill (%d archive bytes served): %d providers, %d versions, %d archives published; %d .tfmirror-tmp-* leftovers",
			c.served.Load()-start, res.Providers, res.Versions, res.Archives, leftovers)

		// The rerun must not wait for the dead build's lock.
		c.build(t, "full.hcl", site, "--lock-timeout", "0")
		res = verifySite(t, c.work, c.env, site)
		if res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
			t.Fatalf("rerun: verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
		}
		checkNoLeftovers(t, site)
		if d := diffTrees(final.hashes, treeHashes(t, site)); d != "" {
			t.Fatalf("rerun after the kill: the tree differs from an uninterrupted build's:\n%s\ntree:\n%s", d, describeTree(t, site))
		}
		return killed
	}

	// (a) After N archive bytes, from the first chunk to the last.
	t.Run("bytes", func(t *testing.T) {
		const points = 10
		for i := 0; i <= points; i++ {
			n := runBytes * int64(i) / points // the last: right after the last chunk
			t.Run(fmt.Sprintf("after_%d_bytes", n), func(t *testing.T) {
				killed := crashRun(t, func(p *tfmirrorProc, _ string, start int64) func() {
					c.onBytes(func(total int64) {
						if total-start >= n {
							p.kill()
						}
					})
					return func() { c.onBytes(nil) }
				})
				if !killed {
					t.Fatalf("the build was not killed after %d of its %d archive bytes", n, runBytes)
				}
			})
		}
	})

	// (b) After N file events (a file created, temporary files of atomic
	// writes included, or replaced) in the tree: between the publications
	// of archives, kept files, <version>.json, index.json and catalog.json.
	// (c) After a random time, from the start of the process to the end of
	// an uninterrupted build.
	run := func(t *testing.T, arm armFunc) bool {
		return crashRun(t, func(p *tfmirrorProc, site string, _ int64) func() { return arm(p, site) })
	}
	t.Run("files", func(t *testing.T) { killAtEvents(t, 12, runEvents, run) })
	t.Run("random", func(t *testing.T) { killAtRandomTimes(t, 4, runTime, run) })

	// (d) At every file event of one build: SIGSTOP freezes the build where
	// it is, which leaves the tree as SIGKILL would at that moment; the tree
	// must verify and have only grown; then SIGCONT. Cheaper than a kill
	// per event, so every step of every publication is checked.
	t.Run("every event", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("reads the process state from /proc")
		}
		site := newSite(t)
		p := c.startCrashBuild(t, site)
		seen := fileState(site)
		freezes := 0
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
			verifySite(t, c.work, c.env, site)
			checkCrashedTree(t, site, base, final)
			freezes++
			p.thaw()
		}
		if code, _ := p.wait(t); code != 0 {
			t.Fatalf("build frozen %d times: exit %d, want 0", freezes, code)
		}
		t.Logf("the build was frozen and its tree checked at %d file events", freezes)
		checkNoLeftovers(t, site)
		if d := diffTrees(final.hashes, treeHashes(t, site)); d != "" {
			t.Fatalf("the tree differs from an uninterrupted build's:\n%s", d)
		}
		// Events that come in quick succession are checked together (an
		// archive and its SBOM, a document's temporary file and its
		// rename), but many must be caught one by one, or this part tests
		// little.
		if freezes < runEvents/5 {
			t.Errorf("only %d freezes for the %d file events of an uninterrupted build", freezes, runEvents)
		}
	})
}

// checkFullSelection checks that site lists every version of every crash
// test provider, each with all three platforms.
func checkFullSelection(t testing.TB, site string) {
	t.Helper()
	got := siteProviders(t, site)
	for _, typ := range crashProviders {
		dir := "registry.opentofu.org/hashicorp/" + typ
		if !slices.Equal(got[dir], crashVersions) {
			t.Errorf("%s/index.json lists %q, want %q", dir, got[dir], crashVersions)
		}
		for _, v := range crashVersions {
			doc := readVersionDoc(t, site, pkgVersion{host: "registry.opentofu.org", ns: "hashicorp", typ: typ, version: v})
			var plats []string
			for pl := range doc.Archives {
				plats = append(plats, pl)
			}
			slices.Sort(plats)
			if want := slices.Sorted(slices.Values(threePlatforms)); !slices.Equal(plats, want) {
				t.Errorf("%s/%s.json lists %q, want %q", dir, v, plats, want)
			}
		}
	}
	if len(got) != len(crashProviders) {
		t.Errorf("site holds providers %v, want only %q", got, crashProviders)
	}
}

// TestConcurrentBuildProcesses runs two real tfmirror processes on one
// site: with --lock-timeout 0, exactly one of two simultaneous builds runs
// and the other fails at once naming the holder; with --lock-timeout 30s,
// a second build started while the first runs waits for it and succeeds.
func TestConcurrentBuildProcesses(t *testing.T) {
	c := newCrashRegistry(t)
	c.reg.SetArchiveDelay(5 * time.Millisecond)
	const lockedMsg = "another tfmirror process is writing this mirror"

	var firstTree map[string]string
	t.Run("lock-timeout 0", func(t *testing.T) {
		site := filepath.Join(t.TempDir(), "site")
		args := []string{"build", "--config", "full.hcl", "--out", site, "--lock-timeout", "0"}
		a := startTfmirror(t, c.work, c.env, args...)
		b := startTfmirror(t, c.work, c.env, args...)
		codeA, _ := a.wait(t)
		codeB, _ := b.wait(t)

		winner, loser, loserCode := a, b, codeB
		if codeA != 0 {
			winner, loser, loserCode = b, a, codeA
		}
		if winner.waitErr != nil || loserCode != 1 {
			t.Fatalf("exit codes %d and %d, want one 0 and one 1", codeA, codeB)
		}
		if msg := loser.stderr.String(); !strings.Contains(msg, lockedMsg) ||
			!strings.Contains(msg, fmt.Sprintf("pid %d ", winner.cmd.Process.Pid)) {
			t.Errorf("the build that lost: stderr does not say %q and name pid %d:\n%s", lockedMsg, winner.cmd.Process.Pid, msg)
		}
		if !loser.ended.Before(winner.ended) {
			t.Errorf("the build that lost ended after the winner (%v after)", loser.ended.Sub(winner.ended))
		}
		res := verifySite(t, c.work, c.env, site)
		if res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
			t.Fatalf("verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
		}
		checkFullSelection(t, site)
		checkNoLeftovers(t, site)
		firstTree = treeHashes(t, site)
	})

	t.Run("lock-timeout 30s", func(t *testing.T) {
		site := filepath.Join(t.TempDir(), "site")
		a := startTfmirror(t, c.work, c.env, "build", "--config", "full.hcl", "--out", site, "--lock-timeout", "0")
		// Start the second build once the first holds the lock.
		holder := fmt.Sprintf("pid %d ", a.cmd.Process.Pid)
		lockFile := filepath.Join(site, ".tfmirror", "lock")
		for {
			if data, err := os.ReadFile(lockFile); err == nil && strings.HasPrefix(string(data), holder) {
				break
			}
			select {
			case <-a.done:
				a.wait(t)
				t.Fatalf("the first build ended before it was seen holding the lock")
			case <-time.After(5 * time.Millisecond):
			}
		}
		b := startTfmirror(t, c.work, c.env, "build", "--config", "full.hcl", "--out", site, "--lock-timeout", "30s")
		codeA, _ := a.wait(t)
		codeB, _ := b.wait(t)
		if codeA != 0 || codeB != 0 {
			t.Fatalf("exit codes %d (first) and %d (waiting), want 0 and 0", codeA, codeB)
		}
		if !a.ended.After(b.started) {
			t.Fatalf("the first build ended before the second started: nothing waited")
		}
		if !b.ended.After(a.ended) {
			t.Errorf("the waiting build ended %v before the first one", a.ended.Sub(b.ended))
		}
		t.Logf("the second build started %v after the first, which ran %v; it ended %v after the first",
			b.started.Sub(a.started).Round(time.Millisecond), a.ended.Sub(a.started).Round(time.Millisecond), b.ended.Sub(a.ended).Round(time.Millisecond))
		res := verifySite(t, c.work, c.env, site)
		if res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
			t.Fatalf("verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
		}
		checkFullSelection(t, site)
		checkNoLeftovers(t, site)
		if firstTree != nil {
			if d := diffTrees(firstTree, treeHashes(t, site)); d != "" {
				t.Errorf("the two sites differ:\n%s", d)
			}
		}
	})
}

// armFunc arms a kill of the build p writing site, and returns what
// disarms it.
type armFunc func(p *tfmirrorProc, site string) (disarm func())

// killAtEvents runs crash tests that kill a build after N file events in
// its tree, for points values of N spread over the events of an
// uninterrupted build; run does one crash test and reports whether the
// kill landed. Most must land, or the test tests nothing.
func killAtEvents(t *testing.T, points, events int, run func(*testing.T, armFunc) bool) {
	hits := 0
	for i := 0; i < points; i++ {
		n := 1 + (events-2)*i/(points-1)
		t.Run(fmt.Sprintf("after_%d_events", n), func(t *testing.T) {
			killed := run(t, func(p *tfmirrorProc, site string) func() {
				stop := make(chan struct{})
				done := watchEvents(site, stop, func(seen int) {
					if seen >= n {
						p.kill()
					}
				})
				return func() { close(stop); <-done }
			})
			if killed {
				hits++
			}
		})
	}
	// The tree is polled, so a kill point may come too late.
	if hits < points*2/3 {
		t.Errorf("only %d of %d kill points were reached before the build ended", hits, points)
	}
}

// killAtRandomTimes runs crash tests that kill a build after random times,
// one in each of points slices of an uninterrupted build's run time.
func killAtRandomTimes(t *testing.T, points int, runTime time.Duration, run func(*testing.T, armFunc) bool) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i < points; i++ {
		d := time.Duration((float64(i) + rng.Float64()) / float64(points) * float64(runTime))
		t.Run(fmt.Sprintf("after_%v", d.Round(time.Millisecond)), func(t *testing.T) {
			run(t, func(p *tfmirrorProc, _ string) func() {
				timer := time.AfterFunc(d, p.kill)
				return func() { timer.Stop() }
			})
		})
	}
}

package modfetch

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// sampler measures the bytes of the regular files under dir, again and
// again until stopped, and keeps the most it saw.
type sampler struct {
	dir  string
	peak atomic.Int64
	quit chan struct{}
	wg   sync.WaitGroup
}

func sample(t *testing.T, dir string) *sampler {
	t.Helper()
	s := &sampler{dir: dir, quit: make(chan struct{})}
	s.wg.Go(func() {
		for {
			s.measure()
			select {
			case <-s.quit:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	t.Cleanup(s.stop)
	return s
}

func (s *sampler) measure() {
	var n int64
	_ = filepath.WalkDir(s.dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil //nolint:nilerr // vanished while walking
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	for {
		old := s.peak.Load()
		if n <= old || s.peak.CompareAndSwap(old, n) {
			return
		}
	}
}

// stop ends the sampling, once, after a last measure.
func (s *sampler) stop() {
	select {
	case <-s.quit:
		return
	default:
		close(s.quit)
	}
	s.wg.Wait()
	s.measure()
}

// bareRepo commits files (name to content) into a new repository and
// serves it as name.git, with the tag v1.
func bareRepo(t *testing.T, s *gitServer, name string, files map[string][]byte) {
	t.Helper()
	work := t.TempDir()
	gitIn(t, work, "init", "--quiet")
	for n, body := range files {
		p := filepath.Join(work, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, work, "add", "-A")
	gitIn(t, work, "commit", "--quiet", "-m", "commit")
	gitIn(t, work, "tag", "v1")
	gitIn(t, s.root, "clone", "--quiet", "--bare", work, name+".git")
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A repository of a few hundred kilobytes whose checkout would be 32 MiB
// (highly compressible files) is refused before its files are written:
// the work area never holds more than the limit. A commit of too many
// files likewise.
func TestFetchGitCheckoutBeyondTheLimit(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	s := newGitServer(t, ca)
	zeros := map[string][]byte{"main.tf": []byte("# bomb\n")}
	for i := range 32 {
		zeros[fmt.Sprintf("data/%02d.bin", i)] = make([]byte, 1<<20)
	}
	bareRepo(t, s, "bomb", zeros)
	many := map[string][]byte{}
	for i := range 60 {
		many[fmt.Sprintf("f%02d.tf", i)] = []byte("#\n")
	}
	bareRepo(t, s, "many", many)

	const limit = 1 << 20
	f := gitFetcher(t, ca, Config{Limits: hashing.ModuleLimits{MaxBytes: limit, MaxFiles: 50}})
	for _, tc := range []struct{ repo, ref, want string }{
		{"bomb", "v1", "its files hold more than the module limit of 1048576 bytes: not checked out"},
		{"bomb", "", "its files hold more than the module limit of 1048576 bytes: not checked out"},
		{"many", "v1", "more than the module limit of 50 entries: not checked out"},
	} {
		t.Run(tc.repo+" "+tc.ref, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "pkg")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			loc := "git::" + s.URL + "/" + tc.repo + ".git"
			if tc.ref != "" {
				loc += "?ref=" + tc.ref
			}
			smp := sample(t, parent)
			_, err := f.Fetch(t.Context(), loc, dst)
			smp.stop()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "fetch module git::"+s.URL) {
				t.Errorf("err = %v, want %q naming the module's location", err, tc.want)
			}
			if peak := smp.peak.Load(); peak >= limit {
				t.Errorf("the work area held %d bytes, not under the limit of %d", peak, limit)
			}
		})
	}

	// By commit hash, and the package itself still fits a limit it is
	// close to.
	commit := gitIn(t, filepath.Join(s.root, "bomb.git"), "rev-parse", "v1^{commit}")
	_, err := f.Fetch(t.Context(), "git::"+s.URL+"/bomb.git?ref="+commit, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "its files hold more than the module limit") {
		t.Errorf("by commit: err = %v", err)
	}
	fits := gitFetcher(t, ca, Config{Limits: hashing.ModuleLimits{MaxBytes: 32<<20 + 7, MaxFiles: 40}})
	if _, err := fits.Fetch(t.Context(), "git::"+s.URL+"/bomb.git?ref=v1", t.TempDir()); err != nil {
		t.Errorf("a package at the limit: %v", err)
	}
}

// The checkout is the commit's files as they are: .gitattributes cannot
// make it larger than the sizes checked before (line endings, encodings).
func TestFetchGitCheckoutIgnoresConversions(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	work := t.TempDir()
	gitIn(t, work, "init", "--quiet")
	commitFiles(t, work, map[string]string{"main.tf": "a\nb\n", "x.u32": "abc\n"}, nil)
	attrs := "* text eol=crlf\n*.u32 working-tree-encoding=UTF-32LE\n"
	if err := os.WriteFile(filepath.Join(work, ".gitattributes"), []byte(attrs), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, work, "add", ".gitattributes")
	gitIn(t, work, "commit", "--quiet", "-m", "attributes")
	gitIn(t, work, "tag", "v1")
	gitIn(t, s.root, "clone", "--quiet", "--bare", work, "crlf.git")
	dst := t.TempDir()
	if _, err := gitFetcher(t, ca, Config{}).Fetch(t.Context(), "git::"+s.URL+"/crlf.git?ref=v1", dst); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"main.tf": "a\nb\n", "x.u32": "abc\n"} {
		if got, err := os.ReadFile(filepath.Join(dst, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q (%v), want %q as committed", name, got, err, want)
		}
	}
}

// A repository whose pack itself is larger than the limit is stopped
// while git fetches it, not after.
func TestFetchGitRepositoryBeyondTheLimit(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	s := newGitServer(t, ca)
	bareRepo(t, s, "big", map[string][]byte{"main.tf": []byte("#\n"), "blob.bin": randomBytes(t, 12<<20)})
	const limit = 1 << 20
	f := gitFetcher(t, ca, Config{Limits: hashing.ModuleLimits{MaxBytes: limit}})
	parent := t.TempDir()
	dst := filepath.Join(parent, "pkg")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	smp := sample(t, parent)
	_, err := f.Fetch(t.Context(), "git::"+s.URL+"/big.git?ref=v1", dst)
	smp.stop()
	if err == nil || !strings.Contains(err.Error(), "git clone stopped: the repository went past the module limit of 1048576 bytes") {
		t.Fatalf("err = %v, want git stopped at the limit", err)
	}
	// The watchdog looks every few milliseconds: what git writes between
	// two looks is the most it can go past.
	if peak := smp.peak.Load(); peak > limit+8<<20 {
		t.Errorf("the work area held %d bytes, far past the limit of %d", peak, limit)
	} else {
		t.Logf("the work area held at most %d bytes", peak)
	}
}

// slowPack wraps the git server's answers to git-upload-pack: after
// after bytes it sends every chunk bytes at most each every, or, with
// every zero, stops sending until the client goes away.
type slowPack struct {
	next         http.Handler
	after, chunk int
	every        time.Duration
	sent         atomic.Int64
	stopped      chan struct{}
	stopOnce     sync.Once
}

func (p *slowPack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
		p.next.ServeHTTP(w, r)
		return
	}
	p.next.ServeHTTP(&slowWriter{ResponseWriter: w, p: p, ctx: r.Context().Done()}, r)
}

type slowWriter struct {
	http.ResponseWriter
	p   *slowPack
	ctx <-chan struct{}
}

func (w *slowWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := len(b)
		if sent := int(w.p.sent.Load()); sent >= w.p.after {
			if w.p.every == 0 {
				w.p.stopOnce.Do(func() { close(w.p.stopped) })
				<-w.ctx
				return written, errors.New("client gone")
			}
			n = min(n, w.p.chunk)
			select {
			case <-time.After(w.p.every):
			case <-w.ctx:
				return written, errors.New("client gone")
			}
		} else {
			n = min(n, w.p.after-sent)
		}
		m, err := w.ResponseWriter.Write(b[:n])
		w.p.sent.Add(int64(m))
		written += m
		if err != nil {
			return written, err
		}
		w.ResponseWriter.(http.Flusher).Flush()
		b = b[n:]
	}
	return written, nil
}

// A git server that stops sending in the middle of the pack fails the
// fetch within the stall limit, well before the fetch's own timeout.
func TestFetchGitStallsMidTransfer(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	s := newGitServer(t, ca)
	bareRepo(t, s, "big", map[string][]byte{"blob.bin": randomBytes(t, 4<<20)})
	stall := &slowPack{next: s, after: 256 << 10, stopped: make(chan struct{})}
	srv := tlsServer(t, ca, stall)
	f := gitFetcher(t, ca, Config{Timeout: time.Minute, Net: httpx.Policy{StallTimeout: time.Second, Retries: 1}})
	start := time.Now()
	_, err := f.Fetch(t.Context(), "git::"+srv.URL+"/big.git?ref=v1", t.TempDir())
	took := time.Since(start)
	select {
	case <-stall.stopped:
	default:
		t.Fatalf("the server never stopped sending (err %v)", err)
	}
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want git to give up on the stalled transfer", err)
	}
	// curl judges the speed over the last five seconds: a stall is caught
	// within the stall limit after those.
	if took > 10*time.Second {
		t.Errorf("took %s to notice a stall, with a stall limit of 1s", took)
	}
	t.Logf("failed after %s: %v", took, err)
}

// Environment of the helper process (TestMain).
const (
	helperLocation = "MODFETCH_HELPER_LOCATION"
	helperDst      = "MODFETCH_HELPER_DST"
	helperCA       = "MODFETCH_HELPER_CA"
)

// TestMain runs the tests, or, with helperLocation set, is the process
// TestFetchGitDiesWithTfmirror kills: it fetches the location its
// environment names.
func TestMain(m *testing.M) {
	loc := os.Getenv(helperLocation)
	if loc == "" {
		os.Exit(m.Run())
	}
	f := New(Config{Environ: []string{"PATH=" + os.Getenv("PATH"), "SSL_CERT_FILE=" + os.Getenv(helperCA)}, Timeout: time.Minute})
	_, err := f.Fetch(context.Background(), loc, os.Getenv(helperDst))
	fmt.Println("fetch:", err)
	os.Exit(0)
}

// A process killed with SIGKILL while git clones leaves no git running:
// not git, not its helpers.
func TestFetchGitDiesWithTfmirror(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	ca := testca.New(t)
	s := newGitServer(t, ca)
	s.cgi.Logger = log.New(io.Discard, "", 0)
	bareRepo(t, s, "big", map[string][]byte{"blob.bin": randomBytes(t, 8<<20)})
	slow := &slowPack{next: s, after: 64 << 10, chunk: 8 << 10, every: 20 * time.Millisecond, stopped: make(chan struct{})}
	srv := tlsServer(t, ca, slow)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	parent := t.TempDir()
	dst := filepath.Join(parent, "pkg")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperLocation+"=git::"+srv.URL+"/big.git?ref=v1", helperDst+"="+dst, helperCA+"="+caFile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); slow.sent.Load() < 256<<10; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the clone did not get going:\n%s", out.String())
		}
	}
	if left := gitsIn(t, parent); len(left) == 0 {
		t.Fatalf("no git is running in %s while it clones", parent)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	for {
		left := gitsIn(t, parent)
		if len(left) == 0 {
			t.Logf("no git left %s after the kill", time.Since(killed))
			return
		}
		if time.Since(killed) > 5*time.Second {
			t.Errorf("5s after SIGKILL, processes still run in the work area: %v", left)
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL) // what this test started
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gitsIn returns the processes (pid and command line) whose working
// directory is dir or below it.
func gitsIn(t *testing.T, dir string) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue // gone, a zombie, or not ours to see
		}
		if rel, err := filepath.Rel(dir, cwd); err == nil && filepath.IsLocal(rel) || cwd == dir {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			found[pid] = strings.ReplaceAll(string(cmdline), "\x00", " ")
		}
	}
	return found
}

// pkt is one pkt-line of git's protocol.
func pkt(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// hostileTerminal is what a hostile server would have a terminal do: set
// its title, show a link that goes elsewhere, clear the screen.
const hostileTerminal = "\x1b]0;owned\x07\x1b]8;;https://evil.example/\x07click here\x1b]8;;\x07\x1b[2J\u202e"

// A git server's messages reach errors with their control characters
// escaped and their length bounded: in the refs it advertises (an ERR
// line) and in the "remote:" lines of its answer to a fetch.
func TestFetchGitEscapesServerMessages(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	makeRepos(t, s)
	long := strings.Repeat("y", 3000)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/refused.git/"):
			w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
			_, _ = io.WriteString(w, pkt("# service=git-upload-pack\n")+"0000"+pkt("ERR "+long+hostileTerminal))
			return
		case r.Method == http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte("command=fetch")) {
				w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
				_, _ = io.WriteString(w, pkt("packfile\n")+pkt("\x02"+hostileTerminal+"progress\n")+pkt("\x03"+long+hostileTerminal+"\n"))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		s.ServeHTTP(w, r)
	}))
	f := gitFetcher(t, ca, Config{})
	for _, repo := range []string{"refused", "mod"} {
		t.Run(repo, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), "git::"+srv.URL+"/"+repo+".git?ref=v1", t.TempDir())
			if err == nil {
				t.Fatal("fetched")
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\x1b\x07\u202e") {
				t.Errorf("the error carries the server's control characters: %q", msg)
			}
			// git itself turns the C0 controls of an ERR line into "?",
			// not those of "remote:" lines, nor Unicode's.
			if !strings.Contains(msg, `\u202e`) ||
				(repo == "mod" && !strings.Contains(msg, `\x1b]0;owned\x07\x1b]8;;https://evil.example/\x07click here`)) {
				t.Errorf("the error does not show the server's message, escaped: %q", msg)
			}
			if len(msg) > 2<<10 {
				t.Errorf("the error is %d bytes long", len(msg))
			}
		})
	}
}

func TestEscapeControl(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 日本":     "plain text, é and 日本",
		"a\x1b[31mred\x1b[0m":      `a\x1b[31mred\x1b[0m`,
		"bell\x07 del\x7f nul\x00": `bell\x07 del\x7f nul\x00`,
		"c1 \u009b and \u202eevil": `c1 \u009b and \u202eevil`,
		"bad \xff\xfe utf8":        `bad \xff\xfe utf8`,
		"line\nbreak\ttab\rreturn": `line\x0abreak\x09tab\x0dreturn`,
		`back\slash`:               `back\slash`,
	} {
		if got := escapeControl(in); got != want {
			t.Errorf("escapeControl(%q) = %q, want %q", in, got, want)
		}
	}
	if got := tail("ab日本", 4); got != "...本" {
		t.Errorf("tail = %q", got)
	}
	if got := clip(strings.Repeat("a", 10)+"日"+strings.Repeat("b", 10), 12, 4); got != "aaaa ... bbbbbbbb" {
		t.Errorf("clip = %q", got)
	}
}

// An archive host that stops sending in the middle of the archive, or
// trickles it, fails the fetch within the stall or speed limit, well
// before the fetch's own timeout.
func TestFetchArchiveStallsMidTransfer(t *testing.T) {
	t.Parallel()
	ca := testca.New(t)
	body := randomBytes(t, 64<<10)
	srv := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		if r.URL.Path == "/stall.zip" {
			<-r.Context().Done()
			return
		}
		for i := len(body) / 2; i < len(body); i += 10 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			_, _ = w.Write(body[i:min(i+10, len(body))])
			w.(http.Flusher).Flush()
		}
	}))
	for _, tc := range []struct {
		path, want string
		net        httpx.Policy
	}{
		{"/stall.zip", "no data for 500ms", httpx.Policy{StallTimeout: 500 * time.Millisecond, Retries: 1}},
		{"/trickle.zip", "less than the speed limit of 1000 bytes a second", httpx.Policy{SpeedLimit: 1000, SpeedTime: 500 * time.Millisecond, Retries: 1}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			f := New(Config{HTTP: ca.Client(), Timeout: time.Minute, Net: tc.net})
			start := time.Now()
			_, err := f.Fetch(t.Context(), srv.URL+tc.path, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "fetch module "+srv.URL+tc.path) {
				t.Errorf("err = %v, want %q naming the location", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %s, with two attempts of about half a second", d)
			}
		})
	}
}

// A commit with a submodule is refused, naming it: its files are in
// another repository tfmirror does not fetch, and the module published
// without them would be incomplete (OpenTofu's own git fetches them).
func TestFetchGitRefusesSubmodules(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	work := t.TempDir()
	gitIn(t, work, "init", "--quiet")
	commitFiles(t, work, map[string]string{"main.tf": "module \"v\" { source = \"./vendored/vpc\" }\n"}, nil)
	head := gitIn(t, work, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(work, ".gitmodules"), []byte("[submodule \"vendored\"]\n\tpath = vendored\n\turl = https://elsewhere.example/vpc.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, work, "add", ".gitmodules")
	gitIn(t, work, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendored")
	gitIn(t, work, "commit", "--quiet", "-m", "submodule")
	gitIn(t, work, "tag", "v1")
	gitIn(t, s.root, "clone", "--quiet", "--bare", work, "sub.git")
	_, err := gitFetcher(t, ca, Config{}).Fetch(t.Context(), "git::"+s.URL+"/sub.git?ref=v1", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), `"vendored" is a git submodule`) {
		t.Errorf("fetch of a commit with a submodule: %v", err)
	}
}

package modfetch

import (
	"io"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// gitServer is git's smart HTTP server (git http-backend as a CGI program)
// over TLS, serving the bare repositories under root.
type gitServer struct {
	URL  string
	root string
	cgi  *cgi.Handler

	mu   sync.Mutex
	auth string   // the Authorization every request must carry; "" for none
	v0   bool     // serve protocol v0 only: no fetching commits by hash
	hang bool     // answer nothing until the client goes away
	seen []string // the Authorization of every request
}

func newGitServer(t *testing.T, ca *testca.CA) *gitServer {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		missing(t, "git: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		missing(t, "git-http-backend: %v", err)
	}
	s := &gitServer{root: t.TempDir()}
	s.cgi = &cgi.Handler{Path: backend, Stderr: io.Discard, Env: []string{
		"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + t.TempDir(),
	}}
	s.URL = tlsServer(t, ca, s).URL
	return s
}

func missing(t *testing.T, format string, args ...any) {
	t.Helper()
	if serverproc.Required() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func (s *gitServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Header.Get("Authorization"))
	auth, v0, hang := s.auth, s.v0, s.hang
	s.mu.Unlock()
	switch {
	case hang:
		<-r.Context().Done()
		return
	case auth != "" && r.Header.Get("Authorization") != auth:
		http.Error(w, "who are you", http.StatusUnauthorized)
		return
	case v0:
		r.Header.Del("Git-Protocol")
	}
	s.cgi.ServeHTTP(w, r)
}

// set changes how the server behaves and forgets what it saw.
func (s *gitServer) set(auth string, v0, hang bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth, s.v0, s.hang, s.seen = auth, v0, hang, nil
}

func (s *gitServer) authSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// gitIn runs git in dir with no configuration of the machine's, and
// returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitFiles writes files into the work tree and commits them.
func commitFiles(t *testing.T, work string, files map[string]string, links map[string]string) string {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(work, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(work, name)); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, work, "add", "-A")
	gitIn(t, work, "commit", "--quiet", "-m", "commit")
	return gitIn(t, work, "rev-parse", "HEAD")
}

// history is the commits of the test repository mod.git.
type history struct{ c0, c1, c2, c3 string }

// makeRepos makes mod.git (c0 untagged; c1 tagged v1, annotated; c2
// tagged v2; c3 the tip of main) and evil.git (a link out) on the server.
func makeRepos(t *testing.T, s *gitServer) history {
	t.Helper()
	work := t.TempDir()
	gitIn(t, work, "init", "--quiet")
	var h history
	h.c0 = commitFiles(t, work, map[string]string{"main.tf": "v0"}, nil)
	h.c1 = commitFiles(t, work, map[string]string{
		"main.tf": "v1", "modules/a/main.tf": `module "b" { source = "../b" }`, "modules/b/main.tf": "b",
	}, map[string]string{"alias.tf": "main.tf"})
	gitIn(t, work, "tag", "-a", "v1", "-m", "v1")
	h.c2 = commitFiles(t, work, map[string]string{"main.tf": "v2"}, nil)
	gitIn(t, work, "tag", "v2")
	h.c3 = commitFiles(t, work, map[string]string{"main.tf": "v3"}, nil)
	gitIn(t, s.root, "clone", "--quiet", "--bare", work, "mod.git")

	evil := t.TempDir()
	gitIn(t, evil, "init", "--quiet")
	commitFiles(t, evil, map[string]string{"main.tf": "x"}, map[string]string{"passwd.tf": "../../../../../../etc/passwd"})
	gitIn(t, s.root, "clone", "--quiet", "--bare", evil, "evil.git")
	return h
}

// gitFetcher fetches with an environment of the test's own: the CA in
// SSL_CERT_FILE, and variables that would break git were they passed on.
func gitFetcher(t *testing.T, ca *testca.CA, cfg Config) *Fetcher {
	t.Helper()
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	cfg.Environ = []string{
		"PATH=" + os.Getenv("PATH"), "SSL_CERT_FILE=" + caFile,
		"GIT_DIR=/nonexistent", "GIT_CONFIG_PARAMETERS='http.sslVerify'='true' 'protocol.allow'='always'",
		"HOME=/nonexistent", "GIT_TRACE_CURL=1",
	}
	return New(cfg)
}

func TestFetchGit(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	h := makeRepos(t, s)
	repo := "git::" + s.URL + "/mod.git"
	f := gitFetcher(t, ca, Config{})
	v1Tree := map[string]string{
		"main.tf": "-rw-r--r-- v1", "alias.tf": "-> main.tf", "modules": "dir -rwxr-xr-x",
		"modules/a": "dir -rwxr-xr-x", "modules/b": "dir -rwxr-xr-x",
		"modules/a/main.tf": `-rw-r--r-- module "b" { source = "../b" }`, "modules/b/main.tf": "-rw-r--r-- b",
	}

	tests := []struct {
		name, query, commit string
		v0                  bool
		main                string // content of main.tf
	}{
		{name: "annotated tag", query: "?ref=v1", commit: h.c1, main: "v1"},
		{name: "tag", query: "?ref=v2&depth=1", commit: h.c2, main: "v2"},
		{name: "branch", query: "?ref=main", commit: h.c3, main: "v3"},
		{name: "default branch", commit: h.c3, main: "v3"},
		{name: "tagged commit", query: "?ref=" + h.c1, commit: h.c1, main: "v1"},
		{name: "commit", query: "?ref=" + strings.ToUpper(h.c0), commit: h.c0, main: "v0"},
		{name: "commit from a server that does not serve commits by hash", query: "?ref=" + h.c0, v0: true, commit: h.c0, main: "v0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.set("", tc.v0, false)
			dst := t.TempDir()
			res, err := f.Fetch(t.Context(), repo+tc.query, dst)
			if err != nil {
				t.Fatal(err)
			}
			if res.Commit != tc.commit || res.SHA256 != "" || res.Subdir != "" {
				t.Errorf("Result = %+v, want commit %s", res, tc.commit)
			}
			tree := readTree(t, dst)
			if tree["main.tf"] != "-rw-r--r-- "+tc.main {
				t.Errorf("main.tf is %q, want %q", tree["main.tf"], tc.main)
			}
			if _, ok := tree[".git"]; ok {
				t.Error(".git is left")
			}
		})
	}

	t.Run("package and provenance", func(t *testing.T) {
		s.set("", false, false)
		dst := t.TempDir()
		res, err := f.Fetch(t.Context(), repo+"//modules/a?ref=v1", dst)
		if err != nil {
			t.Fatal(err)
		}
		want := Result{Subdir: "modules/a", Commit: h.c1, Source: repo + "?ref=v1"}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("Result (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(v1Tree, readTree(t, dst)); diff != "" {
			t.Errorf("package (-want +got):\n%s", diff)
		}
	})

	t.Run("missing commit", func(t *testing.T) {
		s.set("", false, false)
		missing := strings.Repeat("0123456789", 4)
		_, err := f.Fetch(t.Context(), repo+"?ref="+missing, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "commit "+missing+" is not in the repository") || !strings.Contains(err.Error(), repo) {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("missing tag", func(t *testing.T) {
		_, err := f.Fetch(t.Context(), repo+"?ref=v9", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "git clone") || !strings.Contains(err.Error(), "v9") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("link out of the package", func(t *testing.T) {
		_, err := f.Fetch(t.Context(), "git::"+s.URL+"/evil.git", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "symbolic link passwd.tf does not resolve inside the package") {
			t.Fatalf("err = %v", err)
		}
	})

	// A moved tag fetches the commit it points at now: callers compare
	// Result.Commit with what they recorded.
	t.Run("moved tag", func(t *testing.T) {
		gitIn(t, filepath.Join(s.root, "mod.git"), "tag", "-f", "v1", h.c2)
		res, err := f.Fetch(t.Context(), repo+"?ref=v1", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Commit != h.c2 {
			t.Errorf("Commit = %s, want the tag's new commit %s", res.Commit, h.c2)
		}
	})
}

// Credentials reach the repository's host as a header, only there, and
// appear in no error.
func TestFetchGitCredentials(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	h := makeRepos(t, s)
	host := strings.TrimPrefix(s.URL, "https://")
	const secret = "Bearer s3cret-git"
	creds := func(h string) (string, bool) { return secret, h == host }
	repo := "git::" + s.URL + "/mod.git"

	for _, ref := range []string{"v2", h.c0} {
		s.set(secret, false, false)
		res, err := gitFetcher(t, ca, Config{Credentials: creds}).Fetch(t.Context(), repo+"?ref="+ref, t.TempDir())
		if err != nil {
			t.Fatalf("ref %s: %v", ref, err)
		}
		if res.Commit == "" {
			t.Errorf("ref %s: no commit", ref)
		}
		for _, seen := range s.authSeen() {
			if seen != secret {
				t.Errorf("ref %s: a request came with Authorization %q", ref, seen)
			}
		}
	}

	// Credentials for another host are not sent here.
	s.set(secret, false, false)
	other := func(string) (string, bool) { return "", false }
	_, err := gitFetcher(t, ca, Config{Credentials: other}).Fetch(t.Context(), repo+"?ref=v2", t.TempDir())
	if err == nil {
		t.Fatal("fetched without credentials")
	}
	for _, seen := range s.authSeen() {
		if seen != "" {
			t.Errorf("a request came with Authorization %q", seen)
		}
	}

	// Refused credentials, and userinfo, stay out of the error.
	s.set("Bearer another", false, false)
	loc := "git::https://user:hunter2@" + host + "/mod.git?ref=v2"
	_, err = gitFetcher(t, ca, Config{Credentials: creds}).Fetch(t.Context(), loc, t.TempDir())
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v, want a refusal without secrets", err)
	}
}

// Config.Timeout ends a git that hangs, with the helpers it started.
func TestFetchGitTimeout(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	s.set("", false, true)
	start := time.Now()
	_, err := gitFetcher(t, ca, Config{Timeout: time.Second}).Fetch(t.Context(), "git::"+s.URL+"/mod.git?ref=v1", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("err = %v, want a deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s", d)
	}
}

// A redirect to another host is followed without credentials and refused
// with them: git would send them on to that host with every request after.
func TestFetchGitRedirect(t *testing.T) {
	ca := testca.New(t)
	s := newGitServer(t, ca)
	h := makeRepos(t, s)
	redirector := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, s.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	host := strings.TrimPrefix(redirector.URL, "https://")
	loc := "git::" + redirector.URL + "/mod.git?ref=v2"
	parent := t.TempDir()
	dst := filepath.Join(parent, "pkg")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := gitFetcher(t, ca, Config{}).Fetch(t.Context(), loc, dst)
	if err != nil || res.Commit != h.c2 {
		t.Fatalf("without credentials: %+v, %v", res, err)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 1 {
		t.Errorf("left beside dst: %v", entries)
	}

	s.set("", false, false)
	creds := func(h string) (string, bool) { return "Bearer s3cret", h == host }
	_, err = gitFetcher(t, ca, Config{Credentials: creds}).Fetch(t.Context(), loc, t.TempDir())
	if err == nil {
		t.Fatal("followed a redirect to another host with credentials")
	}
	for _, seen := range s.authSeen() {
		if seen != "" {
			t.Errorf("the other host got Authorization %q", seen)
		}
	}
}

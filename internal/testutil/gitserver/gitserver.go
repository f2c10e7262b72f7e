// Package gitserver is a git smart-HTTP server for tests: the system's
// "git http-backend" run as CGI behind an httptest TLS server signed by a
// test CA, serving bare repositories the test makes and changes (commits,
// tags, a tag moved to another commit). It counts requests and keeps their
// headers, so a test can assert that nothing reached it, or what it was
// sent. Requires git; under CI=true or TFMIRROR_E2E=1 a missing git fails
// the test instead of skipping it (serverproc.Required).
package gitserver

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// Server serves the bare repositories under Root at URL + "/NAME.git".
type Server struct {
	URL  string // https://127.0.0.1:PORT
	Root string

	mu       sync.Mutex
	requests []*http.Request
	work     string
}

// Start starts a server for t; it stops at t's cleanup.
func Start(t testing.TB, ca *testca.CA) *Server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if serverproc.Required() {
			t.Fatalf("git is required: %v", err)
		}
		t.Skipf("git is not installed: %v", err)
	}
	backend := backendPath(t)
	s := &Server{Root: t.TempDir(), work: t.TempDir()}
	h := &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + s.work},
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(r.Context()))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func backendPath(t testing.TB) string {
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("git-http-backend: %v", err)
	}
	return p
}

// Requests returns how many requests the server has answered.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Headers returns the headers of every request answered so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]http.Header, 0, len(s.requests))
	for _, r := range s.requests {
		out = append(out, r.Header)
	}
	return out
}

// RepoURL is the clone URL of repository name.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name + ".git" }

// Commit makes the repository's working tree exactly files (path →
// content; a content "symlink:TARGET" makes a symbolic link to TARGET),
// commits it on main and returns the commit hash. The repository is created on first use. tag,
// if not "", is created or moved to the commit. Commits use fixed authors
// and dates, so the same files give the same hashes.
func (s *Server) Commit(t testing.TB, name string, files map[string]string, tag string) string {
	t.Helper()
	work := s.checkout(t, name)
	entries, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(work, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(files[p], "symlink:"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.git(t, work, "add", "-A")
	s.git(t, work, "commit", "-q", "--allow-empty", "-m", "commit")
	commit := strings.TrimSpace(s.git(t, work, "rev-parse", "HEAD"))
	s.git(t, work, "push", "-q", "origin", "HEAD:refs/heads/main")
	if tag != "" {
		s.Tag(t, name, tag, commit)
	}
	return commit
}

// Tag creates tag at commit, or moves it there.
func (s *Server) Tag(t testing.TB, name, tag, commit string) {
	t.Helper()
	work := s.checkout(t, name)
	s.git(t, work, "tag", "-f", tag, commit)
	s.git(t, work, "push", "-q", "-f", "origin", "refs/tags/"+tag)
}

// checkout returns the working copy of repository name, creating the bare
// repository and the copy on first use.
func (s *Server) checkout(t testing.TB, name string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	work := filepath.Join(s.work, name)
	if _, err := os.Stat(work); err == nil {
		return work
	}
	bare := filepath.Join(s.Root, name+".git")
	s.git(t, s.Root, "init", "-q", "--bare", "-b", "main", bare)
	s.git(t, bare, "config", "http.receivepack", "false")
	s.git(t, bare, "config", "uploadpack.allowReachableSHA1InWant", "true")
	s.git(t, s.work, "init", "-q", "-b", "main", work)
	s.git(t, work, "remote", "add", "origin", bare)
	return work
}

func (s *Server) git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), //nolint:forbidigo // a test helper: git needs PATH and the rest of the environment

		"GIT_CONFIG_NOSYSTEM=1", "HOME="+s.work, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com", "GIT_AUTHOR_DATE=2020-01-01T00:00:00Z",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

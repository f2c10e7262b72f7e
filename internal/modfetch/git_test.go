package modfetch

import (
	"bytes"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

	mu    sync.Mutex
	auth  string   // the Authorization every request must carry; "" for none
	v0    bool     // serve protocol v0 only: no fetching commits by hash
	hang  bool     // answer nothing until the client goes away
	seen  []string // the Authorization of every request
	peers []string // the client certificate's common name of every request; "" for none
}

func newGitServer(t *testing.T, ca *testca.CA) *gitServer {
	t.Helper()
	return newGitServerTLS(t, ca.TLSConfig(t))
}

// newGitServerTLS is newGitServer with a TLS configuration of the test's
// own (one that asks for client certificates).
func newGitServerTLS(t *testing.T, cfg *tls.Config) *gitServer {
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
	srv := httptest.NewUnstartedServer(s)
	srv.TLS = cfg
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s.URL = srv.URL
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
	peer := ""
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		peer = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	s.peers = append(s.peers, peer)
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
	s.auth, s.v0, s.hang, s.seen, s.peers = auth, v0, hang, nil, nil
}

func (s *gitServer) authSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// peersSeen returns the client certificate's common name of every request
// answered since set ("" for a request without one).
func (s *gitServer) peersSeen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.peers...)
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

// clientCertificate makes a client certificate of ca for name and returns
// it with its key file's PEM.
func clientCertificate(t *testing.T, ca *testca.CA, name string) (tls.Certificate, []byte) {
	t.Helper()
	certFile, keyFile := ca.WriteClientFiles(t, t.TempDir(), name)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// checkNoKey fails when err shows anything of a PEM key: its armor or any
// line of its base64 body.
func checkNoKey(t *testing.T, err error, keyPEM []byte) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.Contains(msg, "PRIVATE KEY") {
		t.Errorf("the error shows a PEM key: %v", err)
	}
	for line := range strings.Lines(string(keyPEM)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "-----") && strings.Contains(msg, line) {
			t.Errorf("the error shows the key's %q: %v", line, err)
		}
	}
}

// mtlsConfig is a server configuration of ca that requires a client
// certificate clientCA signed (auth tls.RequireAndVerifyClientCert), or
// asks for any (tls.RequestClientCert).
func mtlsConfig(t *testing.T, ca, clientCA *testca.CA, auth tls.ClientAuthType) *tls.Config {
	t.Helper()
	cfg := ca.TLSConfig(t)
	cfg.ClientAuth = auth
	cfg.ClientCAs = clientCA.Pool()
	return cfg
}

// A git server that requires a client certificate gets the one configured
// for its host name, and is refused one configured for another host;
// nothing of the key reaches an error, and the files git was handed are
// gone when the fetch ends.
func TestFetchGitClientCertificate(t *testing.T) {
	ca, clientCA := testca.New(t), testca.New(t)
	s := newGitServerTLS(t, mtlsConfig(t, ca, clientCA, tls.RequireAndVerifyClientCert))
	h := makeRepos(t, s)
	host := strings.TrimPrefix(s.URL, "https://") // 127.0.0.1:PORT
	repo := "git::" + s.URL + "/mod.git"
	cert, keyPEM := clientCertificate(t, clientCA, "builder")
	other, otherKeyPEM := clientCertificate(t, clientCA, "other")
	mine := map[string]tls.Certificate{"127.0.0.1": cert, "git.example.com": other}

	for _, ref := range []string{"v2", h.c0} { // clone, and init + fetch by hash
		t.Run("certificate for the host at "+ref, func(t *testing.T) {
			s.set("", false, false)
			parent := t.TempDir()
			dst := filepath.Join(parent, "pkg")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			res, err := gitFetcher(t, ca, Config{ClientCertificates: mine}).Fetch(t.Context(), repo+"?ref="+ref, dst)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]string{"v2": h.c2, h.c0: h.c0}[ref]; res.Commit != want {
				t.Errorf("Commit = %s, want %s", res.Commit, want)
			}
			peers := s.peersSeen()
			if len(peers) == 0 {
				t.Error("no request reached the server")
			}
			for _, p := range peers {
				if p != "builder" {
					t.Errorf("a request came with the client certificate of %q, want builder's", p)
				}
			}
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("left beside dst: %v", entries)
			}
		})
	}

	t.Run("certificate and credentials", func(t *testing.T) {
		const secret = "Bearer s3cret-git"
		s.set(secret, false, false)
		creds := func(h string) (string, bool) { return secret, h == host }
		res, err := gitFetcher(t, ca, Config{ClientCertificates: mine, Credentials: creds}).Fetch(t.Context(), repo+"?ref=v1", t.TempDir())
		if err != nil || res.Commit != h.c1 {
			t.Fatalf("%+v, %v", res, err)
		}
	})

	t.Run("no certificate", func(t *testing.T) {
		s.set("", false, false)
		_, err := gitFetcher(t, ca, Config{}).Fetch(t.Context(), repo+"?ref=v2", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "fetch module "+repo) || !strings.Contains(err.Error(), "client_certificate block for 127.0.0.1") {
			t.Fatalf("err = %v, want a failure naming the source and its host", err)
		}
		if peers := s.peersSeen(); len(peers) != 0 {
			t.Errorf("requests reached the server: %q", peers)
		}
	})

	// other is a certificate the server would accept: that the fetch fails
	// shows it was not presented.
	t.Run("certificate for another host", func(t *testing.T) {
		s.set("", false, false)
		certs := map[string]tls.Certificate{"localhost": other, "git.example.com": other}
		_, err := gitFetcher(t, ca, Config{ClientCertificates: certs}).Fetch(t.Context(), repo+"?ref=v2", t.TempDir())
		if err == nil {
			t.Fatal("fetched with the certificate of another host")
		}
		checkNoKey(t, err, otherKeyPEM)
		if peers := s.peersSeen(); len(peers) != 0 {
			t.Errorf("requests reached the server: %q", peers)
		}
	})

	// With the key in use, git's failures show nothing of it.
	t.Run("errors with the certificate in use", func(t *testing.T) {
		s.set("", false, false)
		_, err := gitFetcher(t, ca, Config{ClientCertificates: mine}).Fetch(t.Context(), repo+"?ref=v9", t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "v9") {
			t.Fatalf("err = %v, want a missing ref", err)
		}
		checkNoKey(t, err, keyPEM)

		untrusted, untrustedKey := clientCertificate(t, testca.New(t), "stranger")
		_, err = gitFetcher(t, ca, Config{ClientCertificates: map[string]tls.Certificate{"127.0.0.1": untrusted}}).Fetch(t.Context(), repo+"?ref=v2", t.TempDir())
		if err == nil {
			t.Fatal("fetched with a certificate the server does not trust")
		}
		checkNoKey(t, err, untrustedKey)
	})
}

// A redirect, followed without a client certificate, is refused while one
// is in use: git would present it to the other host.
func TestFetchGitClientCertificateRedirect(t *testing.T) {
	ca, clientCA := testca.New(t), testca.New(t)
	target := newGitServerTLS(t, mtlsConfig(t, ca, clientCA, tls.RequestClientCert))
	makeRepos(t, target)
	redirector := tlsServer(t, ca, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	loc := "git::" + redirector.URL + "/mod.git?ref=v2"
	if _, err := gitFetcher(t, ca, Config{}).Fetch(t.Context(), loc, t.TempDir()); err != nil {
		t.Fatalf("without a client certificate: %v", err)
	}
	target.set("", false, false)
	cert, _ := clientCertificate(t, clientCA, "builder")
	certs := map[string]tls.Certificate{"127.0.0.1": cert}
	_, err := gitFetcher(t, ca, Config{ClientCertificates: certs}).Fetch(t.Context(), loc, t.TempDir())
	if err == nil {
		t.Fatal("followed a redirect with a client certificate")
	}
	if peers := target.peersSeen(); len(peers) != 0 {
		t.Errorf("the redirect was followed: the other server answered %d requests (client certificates %q)", len(peers), peers)
	}
}

// git is handed a host's certificate and key scoped to the repository's
// scheme and host, as files only the user can read, through the
// environment: nothing of them on the command line, nothing for another
// host or over http.
func TestNewGitClientCertificate(t *testing.T) {
	clientCA := testca.New(t)
	cert, _ := clientCertificate(t, clientCA, "builder")
	f := New(Config{ClientCertificates: map[string]tls.Certificate{"Git.Example.com": cert, "127.0.0.1": cert}})
	tests := []struct {
		url, prefix string // prefix: of the keys git is given; "" for none
	}{
		{"https://git.example.com/mod.git", "http.https://git.example.com/."},
		{"https://GIT.example.com:8443/mod.git", "http.https://GIT.example.com:8443/."},
		{"https://127.0.0.1:9999/mod.git", "http.https://127.0.0.1:9999/."},
		{"https://other.example.com/mod.git", ""},
		{"https://git.example.com.evil.test/mod.git", ""},
		{"http://127.0.0.1:9999/mod.git", ""},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			if err := os.Chmod(home, 0o700); err != nil {
				t.Fatal(err)
			}
			g, err := f.newGit(u, home)
			if err != nil {
				t.Fatal(err)
			}
			for _, arg := range g.config {
				if strings.Contains(arg, "ssl") || strings.Contains(arg, "PRIVATE") {
					t.Errorf("command line argument %q", arg)
				}
			}
			vars := map[string]string{}
			for _, kv := range g.env {
				k, v, _ := strings.Cut(kv, "=")
				vars[k] = v
			}
			if tc.prefix == "" {
				if _, ok := vars["GIT_CONFIG_COUNT"]; ok || slices.Contains(g.config, "http.followRedirects=false") {
					t.Errorf("configured for %s: %q %q", tc.url, g.config, g.env)
				}
				if entries, _ := os.ReadDir(home); len(entries) != 0 {
					t.Errorf("wrote %v", entries)
				}
				return
			}
			want := map[string]string{
				"GIT_CONFIG_COUNT": "2",
				"GIT_CONFIG_KEY_0": tc.prefix + "sslCert", "GIT_CONFIG_VALUE_0": filepath.Join(home, "client-cert.pem"),
				"GIT_CONFIG_KEY_1": tc.prefix + "sslKey", "GIT_CONFIG_VALUE_1": filepath.Join(home, "client-key.pem"),
			}
			for k, v := range want {
				if vars[k] != v {
					t.Errorf("%s=%q, want %q", k, vars[k], v)
				}
			}
			if !slices.Contains(g.config, "http.followRedirects=false") {
				t.Errorf("redirects are not refused: %q", g.config)
			}
			for _, name := range []string{want["GIT_CONFIG_VALUE_0"], want["GIT_CONFIG_VALUE_1"]} {
				if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("%s: %v, %v, want mode 0600", name, fi, err)
				}
			}
			got, err := tls.LoadX509KeyPair(want["GIT_CONFIG_VALUE_0"], want["GIT_CONFIG_VALUE_1"])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got.Certificate, cert.Certificate, bytes.Equal) {
				t.Error("the certificate written is not the one configured")
			}
		})
	}
}

// What curl says when a server refuses a client without a certificate gets
// the hint naming the host; other failures, and failures with a
// certificate presented, do not.
func TestGitCertHint(t *testing.T) {
	const access = "fatal: unable to access 'https://git.example.com/mod.git/': "
	tests := []struct {
		msg  string
		hint bool
	}{
		{"GnuTLS recv error (-12): A TLS fatal alert has been received.", true},
		{"getpeername() failed with errno 107: Transport endpoint is not connected", true},
		{"Send failure: Broken pipe", true},
		{"Recv failure: Connection reset by peer", true},
		{"GnuTLS recv error (-110): The TLS connection was non-properly terminated.", true},
		{"OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0", true},
		{"error:14094410:SSL routines:ssl3_read_bytes:sslv3 alert handshake failure", true},
		{"OpenSSL SSL_write: Broken pipe, errno 32", true},
		{"Could not resolve host: git.example.com", false},
		{"Failed to connect to git.example.com port 443 after 3 ms: Couldn't connect to server", false},
		{"server certificate verification failed. CAfile: /etc/ssl/certs/ca-certificates.crt CRLfile: none", false},
		{"SSL certificate problem: unable to get local issuer certificate", false},
		{"The requested URL returned error: 404", false},
	}
	const hint = " (if the server requires a client certificate, mutual TLS, add a client_certificate block for git.example.com to the manifest)"
	for _, tc := range tests {
		want := access + tc.msg
		if tc.hint {
			want += hint
		}
		if got := (&gitRunner{noCert: "git.example.com"}).certHint(access + tc.msg); got != want {
			t.Errorf("certHint(%q) = %q, want %q", tc.msg, got, want)
		}
		if got := (&gitRunner{}).certHint(access + tc.msg); got != access+tc.msg {
			t.Errorf("with a certificate presented, certHint(%q) = %q", tc.msg, got)
		}
	}
}

// Package registrytest starts a real OCI registry for tests: Debian's
// docker-registry (CNCF distribution 2.8) as a process on 127.0.0.1 and a
// free port, over TLS with a certificate of a test CA, with htpasswd
// (bcrypt) authentication and its JSON request log captured, so a test can
// count what a client uploaded. StartWithToken runs it with Docker's token
// authentication instead, its token service in the test process
// (token.go).
//
// It owns starting and stopping the process, its configuration, the
// credentials (a random user and password, and a Docker-style config
// file holding them) and reading the registry's own log. It does not
// know what is pushed into the registry; the code under test does.
//
// Without a docker-registry binary the test is skipped, or fails on CI
// or under scripts/test, which installs the Debian package
// (serverproc.Required). Only tests import this package.
package registrytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// Server is a running docker-registry.
type Server struct {
	// Host is "127.0.0.1:PORT", the registry's name in repository
	// references and in the Docker config file.
	Host string
	// Username and Password are the htpasswd user's credentials, made
	// randomly for this server; empty for an anonymous server.
	Username string
	Password string
	// CA made the server's certificate (valid for localhost and
	// 127.0.0.1); CAFile is its PEM file, for SSL_CERT_FILE.
	CA     *testca.CA
	CAFile string
	// DockerConfigDir holds config.json, a Docker-style config file whose
	// "auths" hold the credentials for Host and for "localhost:PORT":
	// the directory for DOCKER_CONFIG, the file for a client that names
	// it (OpenTofu's docker_style_config_files).
	DockerConfigDir string
	DockerConfig    string
	// CertDir holds ca.crt, the layout skopeo's --cert-dir and
	// --dest-cert-dir expect.
	CertDir string
	// Dir is the registry's storage root.
	Dir string
	// Tokens is the token service of a registry started with
	// StartWithToken (nil otherwise): what it was asked, what it granted.
	Tokens *TokenServer

	proc *serverproc.Process
	log  *serverproc.Output // all of it: Requests reads it

	syncSeq int
	syncMu  sync.Mutex
}

// Options change what Start runs.
type Options struct {
	// CA signs the server's certificate; nil makes a new one. Share one
	// with other test servers so one SSL_CERT_FILE trusts them all.
	CA *testca.CA
	// Anonymous runs the registry without authentication.
	Anonymous bool
	// Token runs the registry with token authentication, granting by
	// this policy, instead of htpasswd (StartWithToken).
	Token *TokenPolicy
}

// Binary is the docker-registry to run: $TFMIRROR_DOCKER_REGISTRY, else
// docker-registry on PATH, else /usr/bin/docker-registry.
func Binary() (string, error) {
	if p := getenv("TFMIRROR_DOCKER_REGISTRY"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("TFMIRROR_DOCKER_REGISTRY: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("docker-registry"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/docker-registry"); err == nil {
		return "/usr/bin/docker-registry", nil
	}
	return "", fmt.Errorf("no docker-registry binary: install it with apt-get install -y docker-registry (scripts/test does) or set TFMIRROR_DOCKER_REGISTRY")
}

// Start runs an authenticated registry with a new CA, waits until it
// answers and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if serverproc.Required() {
			t.Fatalf("registrytest: %v (required on CI and under scripts/test)", err)
		}
		t.Skipf("registrytest: %v", err)
	}
	if opts.Anonymous && opts.Token != nil {
		t.Fatal("registrytest: Anonymous and Token exclude each other")
	}
	ca := opts.CA
	if ca == nil {
		ca = testca.New(t)
	}
	dir := t.TempDir()
	s := &Server{CA: ca, Dir: filepath.Join(dir, "storage")}
	if !opts.Anonymous {
		s.Username = "tfmirror-" + serverproc.RandomHex(4)
		s.Password = "pw-" + serverproc.RandomHex(16)
	}
	var certFile, keyFile string
	s.CAFile, certFile, keyFile = ca.WriteFiles(t, dir, "localhost", "127.0.0.1")
	s.CertDir = filepath.Join(dir, "certs")
	if err := os.Mkdir(s.CertDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.CertDir, "ca.crt"), ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if opts.Token != nil {
		s.Tokens = startTokenServer(t, ca, dir, s.Username, s.Password, *opts.Token)
	} else if !opts.Anonymous {
		hash, err := bcrypt.GenerateFromPassword([]byte(s.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(htpasswd, []byte(s.Username+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	conf := filepath.Join(dir, "config.yml")
	err = serverproc.OnFreePort(func(addr string) error {
		s.Host = addr
		if err := os.WriteFile(conf, []byte(s.config(certFile, keyFile, htpasswd, opts.Anonymous, s.Tokens)), 0o600); err != nil {
			return err
		}
		return s.run(t.Context(), bin, conf)
	})
	if err != nil {
		t.Fatalf("registrytest: docker-registry did not start: %v", err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("registrytest: docker-registry log (last 64 KiB):\n%s", s.log.Tail(64<<10))
			if s.Tokens != nil {
				t.Logf("registrytest: token requests:\n%s", s.Tokens.summary())
			}
		}
	})
	s.writeDockerConfig(t, filepath.Join(dir, "docker"))
	return s
}

// config renders the registry's configuration. The log is JSON, one
// "response completed" entry per request, which Requests reads.
func (s *Server) config(certFile, keyFile, htpasswd string, anonymous bool, tokens *TokenServer) string {
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) } // YAML accepts JSON strings
	var b strings.Builder
	fmt.Fprintf(&b, "version: 0.1\n")
	fmt.Fprintf(&b, "log:\n  level: info\n  formatter: json\n  accesslog:\n    disabled: false\n")
	fmt.Fprintf(&b, "storage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\n", q(s.Dir))
	fmt.Fprintf(&b, "http:\n  addr: %s\n  secret: %s\n  tls:\n    certificate: %s\n    key: %s\n", q(s.Host), q("secret-"+s.Host), q(certFile), q(keyFile))
	switch {
	case tokens != nil:
		fmt.Fprintf(&b, "auth:\n  token:\n    realm: %s\n    service: %s\n    issuer: %s\n    rootcertbundle: %s\n",
			q(tokens.Realm), q(TokenService), q(TokenIssuer), q(tokens.RootCertFile))
	case !anonymous:
		fmt.Fprintf(&b, "auth:\n  htpasswd:\n    realm: registrytest\n    path: %s\n", q(htpasswd))
	}
	return b.String()
}

// run starts the process and waits until it answers on /v2/.
func (s *Server) run(ctx context.Context, bin, conf string) error {
	s.log = &serverproc.Output{}
	cmd := exec.Command(bin, "serve", conf)
	// A clean environment: no REGISTRY_* setting of the caller's
	// environment overrides the configuration file.
	cmd.Env = []string{"PATH=" + getenv("PATH"), "HOME=" + filepath.Dir(s.Dir)}
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	proc, err := serverproc.Start(ctx, cmd, s.client(), s.URL()+"/v2/")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, s.log.Tail(8<<10))
	}
	s.proc = proc
	return nil
}

// client trusts the server's CA.
func (s *Server) client() *http.Client {
	c := s.CA.Client()
	c.Timeout = 5 * time.Second
	return c
}

// URL is "https://127.0.0.1:PORT".
func (s *Server) URL() string { return "https://" + s.Host }

// LocalhostHost is the server's name with "localhost": "localhost:PORT".
func (s *Server) LocalhostHost() string {
	_, port, _ := net.SplitHostPort(s.Host)
	return "localhost:" + port
}

// Stop ends the registry (SIGTERM, then SIGKILL); later requests are
// refused. It is called when the test ends.
func (s *Server) Stop() { s.proc.Stop() }

// writeDockerConfig writes config.json with the credentials.
func (s *Server) writeDockerConfig(t testing.TB, dir string) {
	t.Helper()
	s.DockerConfigDir = dir
	s.DockerConfig = filepath.Join(dir, "config.json")
	auths := map[string]any{}
	if s.Username != "" {
		enc := base64.StdEncoding.EncodeToString([]byte(s.Username + ":" + s.Password))
		auths[s.Host] = map[string]string{"auth": enc}
		auths[s.LocalhostHost()] = map[string]string{"auth": enc}
	}
	data, err := json.MarshalIndent(map[string]any{"auths": auths}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.DockerConfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// WrongDockerConfig writes a Docker config file like DockerConfig's but
// with a wrong password into a new directory, and returns the directory.
func (s *Server) WrongDockerConfig(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	enc := base64.StdEncoding.EncodeToString([]byte(s.Username + ":wrong-" + s.Password))
	data := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, s.Host, enc)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Request is one request the registry answered, from its log.
type Request struct {
	Method string
	URI    string // path and query
	Status int
}

// Requests returns every request the registry has answered so far, in
// the order it logged them. It first makes a request of its own and
// waits for it in the log, so every request a client saw answered
// before the call is included.
func (s *Server) Requests(t testing.TB) []Request {
	t.Helper()
	s.syncLog(t)
	var out []Request
	for _, r := range s.parse() {
		if strings.Contains(r.URI, "registrytest-sync=") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// BlobUploads counts the blob uploads the registry completed: PUT
// requests on /v2/<name>/blobs/uploads/ answered 201 (every upload, monolithic
// or chunked, ends with one).
func (s *Server) BlobUploads(t testing.TB) int {
	t.Helper()
	n := 0
	for _, r := range s.Requests(t) {
		if r.Method == http.MethodPut && strings.Contains(r.URI, "/blobs/uploads/") && r.Status == http.StatusCreated {
			n++
		}
	}
	return n
}

// ManifestPuts returns the URIs of the manifests the registry accepted
// (PUT /v2/<name>/manifests/<reference> answered 201), in order.
func (s *Server) ManifestPuts(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, r := range s.Requests(t) {
		if r.Method == http.MethodPut && strings.Contains(r.URI, "/manifests/") && r.Status == http.StatusCreated {
			out = append(out, r.URI)
		}
	}
	return out
}

// syncLog makes a request with a unique marker and waits until the
// registry has logged it.
func (s *Server) syncLog(t testing.TB) {
	t.Helper()
	s.syncMu.Lock()
	s.syncSeq++
	marker := fmt.Sprintf("registrytest-sync=%d", s.syncSeq)
	s.syncMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/v2/?"+marker, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		t.Fatalf("registrytest: the registry does not answer: %v", err)
	}
	_ = resp.Body.Close()
	for {
		if strings.Contains(s.log.String(), marker+`"`) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("registrytest: the registry did not log %s", marker)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logEntry is the part of a "response completed" JSON log entry read.
type logEntry struct {
	Msg    string `json:"msg"`
	Method string `json:"http.request.method"`
	URI    string `json:"http.request.uri"`
	Status int    `json:"http.response.status"`
}

func (s *Server) parse() []Request {
	var out []Request
	sc := bufio.NewScanner(strings.NewReader(s.log.String()))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("{")) {
			continue // the combined-format access log on stdout
		}
		var e logEntry
		if json.Unmarshal(line, &e) != nil || e.Msg != "response completed" {
			continue
		}
		out = append(out, Request{Method: e.Method, URI: e.URI, Status: e.Status})
	}
	return out
}

// Log returns everything the registry wrote so far.
func (s *Server) Log() string { return s.log.String() }

// getenv reads the test process's environment: test support, not library
// code.
func getenv(key string) string {
	return os.Getenv(key) //nolint:forbidigo // test support reads the test's own environment
}

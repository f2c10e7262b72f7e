package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/jsonstream"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// served is a running "tfmirror serve".
type served struct {
	url, caFile    string
	stdout, stderr *syncBuffer
	stop           func() int // interrupts serve and returns its exit code
}

// startServe runs "tfmirror serve SITE" with args on a free port and
// waits for it to announce where it serves and which CA to trust.
func startServe(t *testing.T, site string, args ...string) served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := served{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	exited := make(chan int, 1)
	go func() {
		args := append([]string{"serve", site, "--listen", "127.0.0.1:0"}, args...)
		exited <- Main(ctx, Env{Args: args, Stdout: s.stdout, Stderr: s.stderr})
	}()
	s.stop = func() int {
		cancel()
		return <-exited
	}
	addr := regexp.MustCompile(`at (https://127\.0\.0\.1:\d+/)`)
	caLine := regexp.MustCompile(`trust the CA in (\S+) `)
	for deadline := time.Now().Add(10 * time.Second); s.url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(s.stdout.String()); m != nil {
			s.url = m[1]
		}
	}
	if m := caLine.FindStringSubmatch(s.stdout.String()); m != nil {
		s.caFile = m[1]
	}
	if s.url == "" || s.caFile == "" {
		s.stop()
		t.Fatalf("serve did not announce its URL and CA:\n%s%s", s.stdout.String(), s.stderr.String())
	}
	return s
}

// client trusts the CA serve announced.
func (s served) client(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(s.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", s.caFile)
	}
	return &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func TestServeAMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	s := startServe(t, site, "--log")

	o.environ = []string{"SSL_CERT_FILE=" + s.caFile}
	if code, out, errs := o.run(t, t.TempDir(), "verify", s.url); code != ExitOK {
		t.Errorf("verify %s: exit %d\n%s%s", s.url, code, out, errs)
	}

	client := s.client(t)
	for path, want := range map[string]struct {
		status      int
		contentType string
	}{
		"registry.opentofu.org/hashicorp/foo/index.json":                                   {http.StatusOK, "application/json"},
		"registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip": {http.StatusOK, "application/zip"},
		"registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_SHA256SUMS":      {http.StatusOK, "text/plain; charset=utf-8"},
		"registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_SHA256SUMS.sig":  {http.StatusOK, "application/pgp-signature"},
		"changes.atom":                         {http.StatusOK, "application/atom+xml"},     // the feed of change records
		"":                                     {http.StatusOK, "text/html; charset=utf-8"}, // the catalog page
		"index.html":                           {http.StatusOK, "text/html; charset=utf-8"}, // not a redirect to /
		"registry.opentofu.org/hashicorp/foo/": {http.StatusNotFound, ""},                   // no listings
		".tfmirror/lock":                       {http.StatusNotFound, ""},
		".tfmirror/serve-ca.pem":               {http.StatusNotFound, ""},
		".tfmirror/serve-ca-key.pem":           {http.StatusNotFound, ""},
	} {
		resp, err := client.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want.status {
			t.Errorf("GET /%s: %d, want %d", path, resp.StatusCode, want.status)
		}
		if want.contentType != "" && resp.Header.Get("Content-Type") != want.contentType {
			t.Errorf("GET /%s: Content-Type %q, want %q", path, resp.Header.Get("Content-Type"), want.contentType)
		}
		if want.contentType == "text/html; charset=utf-8" && !strings.Contains(string(body), "hashicorp/foo") {
			t.Errorf("GET /%s is not the catalog page:\n%.300s", path, body)
		}
	}
	if code := s.stop(); code != ExitOK {
		t.Errorf("serve exited with %d after Ctrl-C\n%s", code, s.stderr.String())
	}
	if !strings.Contains(s.stderr.String(), "GET /registry.opentofu.org/hashicorp/foo/index.json 200") {
		t.Errorf("--log did not log the requests:\n%s", s.stderr.String())
	}
}

// serve keeps its CA: a second start (a restart, a reboot) serves with a
// certificate from the same CA and writes the same --ca-out, so clients
// keep working; --new-ca makes another. The CA's key is the owner's only.
func TestServeKeepsItsCA(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	caOut := filepath.Join(t.TempDir(), "mirror-ca.pem")
	first := startServe(t, site, "--ca-out", caOut)
	firstPEM := readFile(t, caOut)
	if code := first.stop(); code != ExitOK || !strings.Contains(first.stdout.String(), "it is new") {
		t.Fatalf("first start: exit %d, want one saying its CA is new:\n%s", code, first.stdout.String())
	}
	info, err := os.Stat(filepath.Join(site, ".tfmirror", "serve-ca-key.pem"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the CA key file: %v, %v; want mode 0600", info, err)
	}

	second := startServe(t, site, "--ca-out", caOut)
	resp, err := first.client(t).Get(second.url) // trusts the first start's CA
	if err != nil {
		t.Fatalf("a client trusting the first start's CA cannot reach the second: %v", err)
	}
	resp.Body.Close()
	if code := second.stop(); code != ExitOK || !strings.Contains(second.stdout.String(), "the same CA as before") {
		t.Errorf("second start: exit %d, want one saying it kept its CA:\n%s", code, second.stdout.String())
	}
	if !bytes.Equal(readFile(t, caOut), firstPEM) {
		t.Errorf("--ca-out changed between two starts")
	}

	third := startServe(t, site, "--ca-out", caOut, "--new-ca")
	defer third.stop()
	if bytes.Equal(readFile(t, caOut), firstPEM) || !strings.Contains(third.stdout.String(), "it is new") {
		t.Errorf("--new-ca kept the old CA:\n%s", third.stdout.String())
	}
}

// A start that fails (the port is taken) writes nothing: no CA in the
// tree, no --ca-out; a kept CA that cannot be read is refused, naming its
// file, not silently replaced.
func TestServeFailedStartWritesNothing(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	caOut := filepath.Join(t.TempDir(), "mirror-ca.pem")
	code, stdout, stderr := o.run(t, t.TempDir(), "serve", site, "--listen", taken.Addr().String(), "--ca-out", caOut)
	if code == ExitOK || !strings.Contains(stderr, taken.Addr().String()) {
		t.Errorf("serve on a taken port: exit %d, want a failure naming %s\n%s%s", code, taken.Addr(), stdout, stderr)
	}
	for _, f := range []string{caOut, filepath.Join(site, ".tfmirror", "serve-ca.pem"), filepath.Join(site, ".tfmirror", "serve-ca-key.pem")} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a failed start wrote %s (%v)", f, err)
		}
	}

	// --ca-out that cannot be written (a file where its directory should
	// be): the start fails, and keeps no CA that no client was given.
	blocker := filepath.Join(t.TempDir(), "afile")
	writeFile(t, blocker, nil)
	code, stdout, stderr = o.run(t, t.TempDir(), "serve", site, "--listen", "127.0.0.1:0", "--ca-out", filepath.Join(blocker, "ca.pem"))
	if code == ExitOK || !strings.Contains(stderr, "--ca-out") {
		t.Errorf("serve with a --ca-out it cannot write: exit %d, want a failure naming --ca-out\n%s%s", code, stdout, stderr)
	}
	for _, f := range []string{filepath.Join(site, ".tfmirror", "serve-ca.pem"), filepath.Join(site, ".tfmirror", "serve-ca-key.pem")} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a start that could not write --ca-out kept %s (%v)", f, err)
		}
	}

	if err := os.WriteFile(filepath.Join(site, ".tfmirror", "serve-ca-key.pem"), []byte("not a CA"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = o.run(t, t.TempDir(), "serve", site, "--listen", "127.0.0.1:0")
	if code != ExitUsage || !strings.Contains(stderr, "serve-ca-key.pem") || !strings.Contains(stderr, "--new-ca") {
		t.Errorf("serve with an unreadable kept CA: exit %d, want %d naming the file and --new-ca\n%s%s", code, ExitUsage, stdout, stderr)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Serving a directory that holds no mirror (yet) starts, since a build
// may publish into it next, but says that clients find nothing there.
func TestServeWarnsOfADirectoryWithoutAMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	for _, tc := range []struct {
		dir  string
		warn bool
	}{{t.TempDir(), true}, {site, false}} {
		s := startServe(t, tc.dir)
		code := s.stop()
		out := s.stdout.String() + s.stderr.String()
		if code != ExitOK || strings.Contains(out, "holds no mirror yet") != tc.warn {
			t.Errorf("serve %s: exit %d, warned %v, want %v:\n%s", tc.dir, code, !tc.warn, tc.warn, out)
		}
	}
}

// A peer that fails its TLS handshake is not worth a line anywhere: the
// standard library's server would write one to the process's standard
// error, for every such peer.
func TestServeKeepsHandshakeFailuresOffStandardError(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	var logged syncBuffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	s := startServe(t, site)
	for range 3 {
		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(s.url, "https://"), "/"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n")) // not TLS
		_, _ = io.Copy(io.Discard, conn)
		_ = conn.Close()
	}
	if _, err := s.client(t).Get(s.url + "index.json"); err != nil {
		t.Fatal(err)
	}
	s.stop()
	if strings.Contains(logged.String(), "handshake") {
		t.Errorf("serve logged failed handshakes:\n%s", logged.String())
	}
}

// With --json, --log's request lines are message events on stdout, not
// text on stderr: stdout carries JSON lines only.
func TestServeLogWithJSON(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	s := startServe(t, site, "--log", "--json")
	resp, err := s.client(t).Get(s.url + "catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code := s.stop(); code != ExitOK {
		t.Fatalf("serve: exit %d\n%s%s", code, s.stdout.String(), s.stderr.String())
	}
	jsonstream.Check(t, s.stdout.String(), ExitOK)
	if !strings.Contains(s.stdout.String(), `{"event":"message","message":"GET /catalog.json 200"`) || strings.Contains(s.stderr.String(), "GET /") {
		t.Errorf("the request was not a message event on stdout\nstdout:\n%s\nstderr:\n%s", s.stdout.String(), s.stderr.String())
	}
}

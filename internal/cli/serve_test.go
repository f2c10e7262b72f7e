package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
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

func TestServeAMirror(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, Env{Args: []string{"serve", site, "--listen", "127.0.0.1:0", "--log"}, Stdout: &stdout, Stderr: &stderr})
	}()
	addr := regexp.MustCompile(`at (https://127\.0\.0\.1:\d+/)`)
	caLine := regexp.MustCompile(`trust the CA in (\S+) `)
	var url, caFile string
	for deadline := time.Now().Add(10 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stdout.String()); m != nil {
			url = m[1]
		}
	}
	if m := caLine.FindStringSubmatch(stdout.String()); m != nil {
		caFile = m[1]
	}
	if url == "" || caFile == "" {
		cancel()
		t.Fatalf("serve did not announce its URL and CA:\n%s%s", stdout.String(), stderr.String())
	}

	o.environ = []string{"SSL_CERT_FILE=" + caFile}
	if code, out, errs := o.run(t, t.TempDir(), "verify", url); code != ExitOK {
		t.Errorf("verify %s: exit %d\n%s%s", url, code, out, errs)
	}

	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for path, want := range map[string]int{
		"registry.opentofu.org/hashicorp/foo/index.json": http.StatusOK,
		"registry.opentofu.org/hashicorp/foo/":           http.StatusNotFound, // no listings
		".tfmirror/lock":                                 http.StatusNotFound,
		".tfmirror/serve-ca.pem":                         http.StatusNotFound,
	} {
		resp, err := client.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
		if want == http.StatusOK && resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: Content-Type %q", path, resp.Header.Get("Content-Type"))
		}
	}
	cancel()
	if code := <-exited; code != ExitOK {
		t.Errorf("serve exited with %d after Ctrl-C\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "GET /registry.opentofu.org/hashicorp/foo/index.json 200") {
		t.Errorf("--log did not log the requests:\n%s", stderr.String())
	}
}

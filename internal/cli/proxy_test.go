package cli

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
)

// connectProxy is an HTTPS proxy that connects every CONNECT request to one
// address, whatever host it names, and records the hosts asked for.
type connectProxy struct {
	target string
	mu     sync.Mutex
	hosts  []string
}

func (p *connectProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.hosts = append(p.hosts, r.Host)
	p.mu.Unlock()
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	_, _ = io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n")
	go func() { _, _ = io.Copy(upstream, client); upstream.Close() }()
	_, _ = io.Copy(client, upstream)
	client.Close()
}

func (p *connectProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...)
}

func TestBuildGoesThroughHTTPSProxy(t *testing.T) {
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	origin, err := url.Parse(o.reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &connectProxy{target: origin.Host}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	// origin.test resolves nowhere: only the proxy can reach it.
	hostAndPort := fakeregistry.UnresolvableHost + ":" + origin.Port()
	writeManifest := func(dir string) {
		writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
host "registry.opentofu.org" {
  services = { "providers.v1" = "https://`+hostAndPort+`/v1/providers/" }
}
`)
	}
	base := o.environ

	t.Run("HTTPS_PROXY", func(t *testing.T) {
		o.environ = append(base, "HTTPS_PROXY="+srv.URL)
		dir := t.TempDir()
		writeManifest(dir)
		code, stdout, stderr := o.run(t, dir, "build")
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
		}
		if got := proxy.seen(); len(got) == 0 || got[0] != hostAndPort {
			t.Errorf("proxy saw CONNECT to %q, want %q", got, hostAndPort)
		}
	})
	t.Run("NO_PROXY", func(t *testing.T) {
		before := len(proxy.seen())
		o.environ = append(base, "https_proxy="+srv.URL, "NO_PROXY=origin.test")
		dir := t.TempDir()
		writeManifest(dir)
		code, _, stderr := o.run(t, dir, "build")
		if code != ExitFailure || !strings.Contains(stderr, "origin.test") {
			t.Errorf("exit %d, want %d with an error naming origin.test:\n%s", code, ExitFailure, stderr)
		}
		if len(proxy.seen()) != before {
			t.Errorf("NO_PROXY host went through the proxy: %q", proxy.seen()[before:])
		}
	})
}

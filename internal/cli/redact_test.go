package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// echoProxy plays an S3 endpoint that quotes the session token it was
// sent in an error: in front of a real versitygw (which takes no session
// token: the proxy drops the token and signs the request again), it
// answers the requests echo picks with 403 AccessDenied whose message
// holds the request's X-Amz-Security-Token, and a presigned URL.
type echoProxy struct {
	srv    *s3test.Server
	bucket string
	echo   func(method, key string) bool
	rp     *httputil.ReverseProxy
	echoed atomic.Int64
}

func startEchoProxy(t *testing.T, srv *s3test.Server, bucket string, echo func(method, key string) bool) (*echoProxy, string) {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &echoProxy{srv: srv, bucket: bucket, echo: echo, rp: httputil.NewSingleHostReverseProxy(target)}
	hs := httptest.NewServer(p)
	t.Cleanup(hs.Close)
	return p, hs.URL
}

func (p *echoProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+p.bucket), "/")
	token := r.Header.Get("X-Amz-Security-Token")
	if p.echo(r.Method, key) {
		p.echoed.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<Error><Code>AccessDenied</Code><Message>session token %s is not allowed here; see https://s3.example/x?X-Amz-Signature=SIGNATURE0123&amp;X-Amz-Credential=CREDENTIAL0123</Message><Key>%s</Key><RequestId>ECHO</RequestId></Error>`,
			token, key)
		return
	}
	r.Header.Del("X-Amz-Security-Token")
	if err := resign(r, p.srv); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// A session token echoed back by the S3 endpoint in its error is never
// printed, in text or JSON, by build, verify or bundle create: the
// message is, with the token (and the presigned URL's signature)
// replaced.
func TestEchoedSessionTokenRedacted(t *testing.T) {
	srv := s3test.Start(t)
	const token = "FwoGZXIvYXdzEDoaDSESSIONTOKEN+secret/part=="
	s := newThrottleSetup(t, srv, "echo", "1.0.0")
	uri := srv.URI("echo", "site")
	if code, stdout, stderr := s.run(t, s.direct, "build", "--out", uri); code != ExitOK {
		t.Fatalf("first build: exit %d\n%s%s", code, stdout, stderr)
	}
	s.o.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64", "darwin_arm64")
	bundle := filepath.Join(t.TempDir(), "mirror.tar.gz")
	const dir = "site/registry.opentofu.org/hashicorp/foo/"
	for _, tc := range []struct {
		name string
		args []string
		echo func(method, key string) bool
	}{
		{"build", []string{"build", "--out", uri}, func(method, key string) bool {
			return method == http.MethodPut && strings.HasSuffix(key, ".zip")
		}},
		{"verify", []string{"verify", uri}, func(method, key string) bool {
			return method == http.MethodGet && key == dir+"index.json"
		}},
		{"bundle create", []string{"bundle", "create", uri, "--out", bundle}, func(method, key string) bool {
			return method == http.MethodGet && strings.HasSuffix(key, ".zip")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy, proxyURL := startEchoProxy(t, srv, "echo", tc.echo)
			env := withEnv(s.through(proxyURL), "AWS_SESSION_TOKEN", token)
			for _, format := range [][]string{nil, {"--json"}} {
				args := append(append([]string{}, tc.args...), format...)
				before := proxy.echoed.Load()
				code, stdout, stderr := s.run(t, env, args...)
				out := stdout + stderr
				t.Logf("%s: exit %d\n%s", strings.Join(args, " "), code, out)
				if proxy.echoed.Load() == before {
					t.Fatalf("%s: the endpoint echoed nothing: the fault was not injected", strings.Join(args, " "))
				}
				if code == ExitOK {
					t.Errorf("%s: exit 0 though the endpoint refused a request", strings.Join(args, " "))
				}
				for _, secret := range []string{token, "DSESSIONTOKEN", "SIGNATURE0123", "CREDENTIAL0123", srv.SecretKey} {
					if strings.Contains(out, secret) {
						t.Errorf("%s printed the secret %q", strings.Join(args, " "), secret)
					}
				}
				if !strings.Contains(out, "session token xxxxx is not allowed here") {
					t.Errorf("%s does not print the endpoint's message, redacted", strings.Join(args, " "))
				}
			}
		})
	}
}

// A hostile registry's error carries terminal control sequences (a
// window title, a hyperlink, a screen clear) in its status line, a place
// where Go takes any byte, and the token of the manifest's credentials
// block it was sent: tfmirror prints the error with every control
// character escaped, in text (in JSON they are escaped by the encoding),
// and the token replaced, in both.
func TestRegistryErrorEscapedAndRedacted(t *testing.T) {
	const token = "manifest-token-0123456789"
	const hostile = "\x1b]0;owned\x07\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\x1b[2J\u202egnp.exe"
	ca := testca.New(t)
	caFile, _, _ := ca.WriteFiles(t, t.TempDir())
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		fmt.Fprintf(buf, "HTTP/1.1 400 %s (%s)\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", hostile, r.Header.Get("Authorization"))
		_ = buf.Flush()
	}))
	srv.TLS = ca.TLSConfig(t)
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "registry.test/acme/foo" { versions = ">= 1.0.0" }
host "registry.test" {
  services = { "providers.v1" = "`+srv.URL+`/v1/providers/" }
}
credentials "registry.test" { token = "`+token+`" }
`)
	o := origin{environ: []string{"SSL_CERT_FILE=" + caFile, "XDG_CACHE_HOME=" + t.TempDir()}}
	code, stdout, stderr := o.run(t, dir, "build", "--retries", "0")
	out := stdout + stderr
	t.Logf("exit %d:\n%s", code, out)
	if code == ExitOK {
		t.Fatal("the build succeeded against a registry that answers 400")
	}
	for _, c := range []string{"\x1b", "\x07", "\u202e", token} {
		if strings.Contains(out, c) {
			t.Errorf("the output holds the control character %q raw", c)
		}
	}
	if !strings.Contains(out, `\x1b]0;owned\x07`) && !strings.Contains(out, `\x1b]0;owned\a`) || !strings.Contains(out, `\u202egnp.exe (Bearer xxxxx)`) {
		t.Errorf("the output does not show the registry's status line, escaped and redacted")
	}

	code, stdout, stderr = o.run(t, dir, "build", "--retries", "0", "--json")
	out = stdout + stderr
	if code == ExitOK || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "(Bearer xxxxx)") {
		t.Errorf("build --json: exit %d, want a failure with the status line escaped and redacted:\n%q", code, out)
	}
	if strings.Contains(out, token) {
		t.Errorf("build --json printed the manifest's token")
	}
}

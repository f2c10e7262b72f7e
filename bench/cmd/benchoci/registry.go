package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tfmirror/tfmirror/internal/serve"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
)

// registry is docker-registry, configured and, once started, running.
type registry struct {
	bin      string
	storage  string // the storage root (--dir)
	stateDir string

	username, password string
	caFile             string // the CA certificate, PEM
	certFile, keyFile  string // the server's
	htpasswd           string
	dockerConfig       string // config.json with the credentials
	logFile            string // everything the registry wrote
	caPool             *x509.CertPool

	host string // 127.0.0.1:PORT
	proc *serverproc.Process
	log  *logSink

	syncMu  sync.Mutex
	syncSeq int
}

// newRegistry writes what docker-registry and its clients need into
// stateDir: a throwaway CA and a certificate it signs for 127.0.0.1 and
// localhost, an htpasswd file and config.json for a random user.
func newRegistry(bin, storage, stateDir string) (*registry, error) {
	r := &registry{
		bin:          bin,
		storage:      storage,
		stateDir:     stateDir,
		username:     "bench-" + serverproc.RandomHex(4),
		password:     "pw-" + serverproc.RandomHex(16),
		caFile:       filepath.Join(stateDir, "ca.pem"),
		certFile:     filepath.Join(stateDir, "server.pem"),
		keyFile:      filepath.Join(stateDir, "server-key.pem"),
		htpasswd:     filepath.Join(stateDir, "htpasswd"),
		dockerConfig: filepath.Join(stateDir, "docker", "config.json"),
		logFile:      filepath.Join(stateDir, "registry.log"),
	}
	caPEM, cert, err := serve.SelfSigned([]string{"127.0.0.1", "localhost"}, 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	r.caPool = x509.NewCertPool()
	r.caPool.AppendCertsFromPEM(caPEM)
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, err
	}
	var certPEM []byte // the server's certificate, then the CA's
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	hash, err := bcrypt.GenerateFromPassword([]byte(r.password), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{r.caFile, caPEM},
		{r.certFile, certPEM},
		{r.keyFile, keyPEM},
		{r.htpasswd, []byte(r.username + ":" + string(hash) + "\n")},
	} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// config renders the registry's configuration for host. The log is JSON,
// one "response completed" entry per request, which the counters read;
// the combined-format access log is off.
func (r *registry) config() string {
	q := func(v string) string { b, _ := json.Marshal(v); return string(b) } // YAML accepts JSON strings
	var b strings.Builder
	fmt.Fprintf(&b, "version: 0.1\n")
	fmt.Fprintf(&b, "log:\n  level: info\n  formatter: json\n  accesslog:\n    disabled: true\n")
	fmt.Fprintf(&b, "storage:\n  filesystem:\n    rootdirectory: %s\n", q(r.storage))
	fmt.Fprintf(&b, "http:\n  addr: %s\n  secret: %s\n  tls:\n    certificate: %s\n    key: %s\n", q(r.host), q("secret-"+serverproc.RandomHex(8)), q(r.certFile), q(r.keyFile))
	fmt.Fprintf(&b, "auth:\n  htpasswd:\n    realm: benchoci\n    path: %s\n", q(r.htpasswd))
	return b.String()
}

// writeDockerConfig writes config.json: the credentials for the host, as
// 127.0.0.1:PORT and as localhost:PORT.
func (r *registry) writeDockerConfig() error {
	enc := base64.StdEncoding.EncodeToString([]byte(r.username + ":" + r.password))
	_, port, _ := net.SplitHostPort(r.host)
	auths := map[string]any{
		r.host:              map[string]string{"auth": enc},
		"localhost:" + port: map[string]string{"auth": enc},
	}
	data, err := json.MarshalIndent(map[string]any{"auths": auths}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(r.dockerConfig), 0o700); err != nil {
		return err
	}
	return os.WriteFile(r.dockerConfig, append(data, '\n'), 0o600)
}

// start runs docker-registry on a free port and waits until it answers.
func (r *registry) start(ctx context.Context) error {
	f, err := os.OpenFile(r.logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	r.log = newLogSink(f, newCounters(r.storage))
	err = serverproc.OnFreePort(func(addr string) error {
		r.host = addr
		return r.run(ctx)
	})
	if err != nil {
		return fmt.Errorf("docker-registry did not start: %w", err)
	}
	return r.writeDockerConfig()
}

func (r *registry) run(ctx context.Context) error {
	conf := filepath.Join(r.stateDir, "config.yml")
	if err := os.WriteFile(conf, []byte(r.config()), 0o600); err != nil {
		return err
	}
	// Not cancelled with ctx: stop ends the process, gently.
	cmd := exec.CommandContext(context.WithoutCancel(ctx), r.bin, "serve", conf)
	// A clean environment: no REGISTRY_* setting of the caller's
	// environment overrides the configuration file.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + r.stateDir}
	cmd.Stdout = r.log
	cmd.Stderr = r.log
	// Any HTTP answer (401 for the anonymous request) means it is up.
	proc, err := serverproc.Start(ctx, cmd, r.client(2*time.Second), "https://"+r.host+"/v2/?"+syncParam+"=0")
	if err != nil {
		return fmt.Errorf("%w: %s", err, r.tail())
	}
	r.proc = proc
	return nil
}

// stop ends docker-registry: SIGTERM, then SIGKILL if it lingers.
func (r *registry) stop() { r.proc.Stop() }

// tail is the end of the registry's log, for an error message.
func (r *registry) tail() string { return strings.TrimSpace(r.log.tail()) }

// client trusts the registry's CA.
func (r *registry) client(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: r.caPool, MinVersion: tls.VersionTLS12},
		},
	}
}

// syncLog makes a request with a unique marker and waits until the
// registry has logged it: every request answered before is then counted.
func (r *registry) syncLog(ctx context.Context) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	r.syncSeq++
	seq := r.syncSeq
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/v2/?%s=%d", r.host, syncParam, seq), nil)
	if err != nil {
		return err
	}
	resp, err := r.client(10 * time.Second).Do(req)
	if err != nil {
		return fmt.Errorf("the registry does not answer: %w", err)
	}
	_ = resp.Body.Close()
	for r.log.counters.synced() < seq {
		if ctx.Err() != nil {
			return fmt.Errorf("the registry did not log request %s=%d", syncParam, seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// handler answers /_stats and /_tags.
func (r *registry) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_stats", func(w http.ResponseWriter, req *http.Request) {
		if err := r.syncLog(req.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(formatKV(r.log.counters.snapshot())))
	})
	mux.HandleFunc("GET /_tags", func(w http.ResponseWriter, req *http.Request) {
		kv, err := storedTags(r.storage, req.URL.Query().Get("prefix"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(formatKV(kv)))
	})
	return mux
}

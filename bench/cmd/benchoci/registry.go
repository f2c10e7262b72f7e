package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// startTimeout bounds how long docker-registry may take to answer.
const startTimeout = 30 * time.Second

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
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
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
		username:     "bench-" + randomHex(4),
		password:     "pw-" + randomHex(16),
		caFile:       filepath.Join(stateDir, "ca.pem"),
		certFile:     filepath.Join(stateDir, "server.pem"),
		keyFile:      filepath.Join(stateDir, "server-key.pem"),
		htpasswd:     filepath.Join(stateDir, "htpasswd"),
		dockerConfig: filepath.Join(stateDir, "docker", "config.json"),
		logFile:      filepath.Join(stateDir, "registry.log"),
	}
	caPEM, certPEM, keyPEM, err := newCertificates()
	if err != nil {
		return nil, err
	}
	r.caPool = x509.NewCertPool()
	r.caPool.AppendCertsFromPEM(caPEM)
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
	fmt.Fprintf(&b, "http:\n  addr: %s\n  secret: %s\n  tls:\n    certificate: %s\n    key: %s\n", q(r.host), q("secret-"+randomHex(8)), q(r.certFile), q(r.keyFile))
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
// The free port is found by listening and closing, so another process may
// take it first: it tries a few.
func (r *registry) start(ctx context.Context) error {
	f, err := os.OpenFile(r.logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	r.log = newLogSink(f, newCounters(r.storage))
	for range 3 {
		var port int
		if port, err = freePort(ctx); err != nil {
			return err
		}
		r.host = fmt.Sprintf("127.0.0.1:%d", port)
		if err = r.run(ctx); err == nil {
			return r.writeDockerConfig()
		}
	}
	return fmt.Errorf("docker-registry did not start: %w", err)
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
	// If benchoci dies without stopping it, the kernel does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return err
	}
	r.cmd = cmd
	r.done = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()

	client := r.client(2 * time.Second)
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-r.done:
			return fmt.Errorf("exited early: %s", r.tail())
		case <-ctx.Done():
			r.stop()
			return ctx.Err()
		default:
		}
		// Any HTTP answer (401 for the anonymous request) means it is up.
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+r.host+"/v2/?"+syncParam+"=0", nil)
		if err != nil {
			r.stop()
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			r.stop()
			return fmt.Errorf("no answer on %s after %s: %w", r.host, startTimeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends docker-registry: SIGTERM, then SIGKILL if it lingers.
func (r *registry) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// tail is the end of the registry's log, for an error message.
func (r *registry) tail() string {
	if r.log == nil {
		return ""
	}
	return strings.TrimSpace(r.log.tail())
}

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

// newCertificates makes a throwaway CA and a certificate it signs for
// 127.0.0.1 and localhost, valid for a week; all three as PEM.
func newCertificates() (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "benchoci throwaway CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

func freePort(ctx context.Context) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

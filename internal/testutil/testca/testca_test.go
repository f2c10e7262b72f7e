package testca

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

func TestClientTrustsServer(t *testing.T) {
	ca := New(t)
	srv := startServer(t, ca.TLSConfig(t))
	resp, err := ca.Client().Get(srv.URL)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "ok" {
		t.Errorf("body = %q, want ok", body)
	}
}

func TestOtherCARejected(t *testing.T) {
	srv := startServer(t, New(t).TLSConfig(t))
	resp, err := New(t).Client().Get(srv.URL)
	if err == nil {
		resp.Body.Close()
		t.Fatal("GET with another CA succeeded")
	}
}

func TestServerCertificateHosts(t *testing.T) {
	ca := New(t)
	cert := ca.ServerCertificate(t, "mirror.test", "::1", "10.0.0.1")
	for _, host := range []string{"mirror.test", "::1", "10.0.0.1"} {
		if err := verify(ca, cert.Leaf, host); err != nil {
			t.Errorf("verify %s: %v", host, err)
		}
	}
	if err := verify(ca, cert.Leaf, "localhost"); err == nil {
		t.Error("leaf unexpectedly valid for localhost")
	}
	if d := cert.Leaf.NotAfter.Sub(cert.Leaf.NotBefore); d < 24*time.Hour {
		t.Errorf("validity %v, want at least 24h", d)
	}
}

func TestServerCertificateDefaultHosts(t *testing.T) {
	ca := New(t)
	cert := ca.ServerCertificate(t)
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if err := verify(ca, cert.Leaf, host); err != nil {
			t.Errorf("verify %s: %v", host, err)
		}
	}
}

func TestWriteFiles(t *testing.T) {
	ca := New(t)
	caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "localhost")
	for _, f := range []string{caFile, certFile, keyFile} {
		checkMode(t, f)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil || string(caPEM) != string(ca.CertPEM) {
		t.Fatalf("ca.pem differs from CertPEM (err %v)", err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatalf("LoadX509KeyPair: %v", err)
	}
	if err := verify(ca, pair.Leaf, "localhost"); err != nil {
		t.Errorf("verify written cert: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Error("ca.pem holds no certificate")
	}
}

func checkMode(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("%s mode %v, want 0644", path, fi.Mode().Perm())
	}
}

func verify(ca *CA, leaf *x509.Certificate, host string) error {
	_, err := leaf.Verify(x509.VerifyOptions{
		DNSName:   host,
		Roots:     ca.Pool(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err
}

func startServer(t *testing.T, cfg *tls.Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

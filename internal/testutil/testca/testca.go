// Package testca is a throwaway certificate authority for tests.
//
// It owns making a CA and server certificates signed by it (ECDSA P-256,
// valid for 24 hours), the matching TLS configurations and HTTP client, and
// writing them as PEM files for external servers such as nginx. Nothing here
// is meant for production use; only tests import it.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// validity is how long certificates made here stay valid.
const validity = 24 * time.Hour

// defaultHosts are used when no hosts are given.
var defaultHosts = []string{"localhost", "127.0.0.1"}

// CA is a throwaway certificate authority made in the test.
type CA struct {
	CertPEM []byte // PEM of the CA cert

	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// New makes a fresh CA with its own key.
func New(t testing.TB) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: "tfmirror test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("testca: create CA certificate: %v", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testca: parse CA certificate: %v", err)
	}
	return &CA{CertPEM: certPEM(der), cert: cert, key: key}
}

// ServerCertificate returns a leaf cert signed by the CA, valid for the
// given DNS names / IP addresses (strings; IPs parsed with net.ParseIP).
// Without hosts it is valid for "localhost" and "127.0.0.1".
func (ca *CA) ServerCertificate(t testing.TB, hosts ...string) tls.Certificate {
	t.Helper()
	der, key := ca.leaf(t, hosts)
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("testca: parse server certificate: %v", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TLSConfig returns a server *tls.Config for hosts (default "localhost","127.0.0.1").
func (ca *CA) TLSConfig(t testing.TB, hosts ...string) *tls.Config {
	t.Helper()
	return &tls.Config{
		Certificates: []tls.Certificate{ca.ServerCertificate(t, hosts...)},
		MinVersion:   tls.VersionTLS12,
	}
}

// Pool returns an x509.CertPool holding only the CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Client returns an *http.Client trusting only the CA.
func (ca *CA) Client() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: time.Minute}
}

// WriteFiles writes ca.pem, server.pem, server-key.pem (leaf for hosts) into dir
// and returns their paths (for nginx and SSL_CERT_FILE). The files have mode
// 0644 so that servers running as another user can read them.
func (ca *CA) WriteFiles(t testing.TB, dir string, hosts ...string) (caFile, certFile, keyFile string) {
	t.Helper()
	der, key := ca.leaf(t, hosts)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testca: marshal server key: %v", err)
	}
	caFile = writeFile(t, dir, "ca.pem", ca.CertPEM)
	certFile = writeFile(t, dir, "server.pem", certPEM(der))
	keyFile = writeFile(t, dir, "server-key.pem", pemBlock("PRIVATE KEY", keyDER))
	return caFile, certFile, keyFile
}

// leaf makes a server certificate for hosts and returns it with its key.
func (ca *CA) leaf(t testing.TB, hosts []string) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	if len(hosts) == 0 {
		hosts = defaultHosts
	}
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: hosts[0]},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	addHosts(tmpl, hosts)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("testca: create server certificate: %v", err)
	}
	return der, key
}

// addHosts puts each host into the IP or DNS subject alternative names.
func addHosts(tmpl *x509.Certificate, hosts []string) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testca: generate key: %v", err)
	}
	return key
}

// serial returns a random 128-bit certificate serial number.
func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		t.Fatalf("testca: serial number: %v", err)
	}
	return n
}

func certPEM(der []byte) []byte {
	return pemBlock("CERTIFICATE", der)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeFile writes data to dir/name with mode 0644 regardless of umask.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("testca: %v", err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatalf("testca: %v", err)
	}
	return path
}

// WriteClientFiles writes a client certificate (for mutual TLS, extended
// key usage client auth) for name, signed by the CA, and its key into dir,
// and returns their paths.
func (ca *CA) WriteClientFiles(t testing.TB, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatalf("testca: create client certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatalf("testca: marshal client key: %v", err)
	}
	certFile = writeFile(t, dir, name+"-client.pem", certPEM(der))
	keyFile = writeFile(t, dir, name+"-client-key.pem", pemBlock("PRIVATE KEY", keyDER))
	return certFile, keyFile
}

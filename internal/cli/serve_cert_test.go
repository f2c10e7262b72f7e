package cli

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate for names, valid from
// notBefore to notAfter, and its key, into dir.
func writeCert(t *testing.T, dir string, notBefore, notAfter time.Time, names ...string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mirror"},
		NotBefore: notBefore, NotAfter: notAfter,
		DNSNames: names,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "mirror.pem"), filepath.Join(dir, "mirror-key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// An operator's certificate that clients would refuse (not valid yet,
// expired, or not for a --hostname given) is refused before serving; one
// that expires soon is served with a warning.
func TestServeChecksTheOperatorsCertificate(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	now := time.Now()
	for _, tc := range []struct {
		name              string
		notBefore, expiry time.Time
		args              []string
		names             []string
		refused           string
	}{
		{"expired", now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), nil, nil, "expired on " + now.Add(-24*time.Hour).UTC().Format("2006-01-02")},
		{"not valid yet", now.Add(24 * time.Hour), now.Add(48 * time.Hour), nil, nil, "is not valid until " + now.Add(24*time.Hour).UTC().Format("2006-01-02")},
		{"another hostname", now.Add(-time.Hour), now.Add(365 * 24 * time.Hour), []string{"--hostname", "mirror.example.com"}, nil, "is not valid for --hostname mirror.example.com (it is for localhost, mirror.internal)"},
		{"no host", now.Add(-time.Hour), now.Add(365 * 24 * time.Hour), nil, []string{}, "names no host (it has no subject alternative names)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names := tc.names
			if names == nil {
				names = []string{"localhost", "mirror.internal"}
			}
			cert, key := writeCert(t, t.TempDir(), tc.notBefore, tc.expiry, names...)
			args := append([]string{"serve", site, "--listen", "127.0.0.1:0", "--cert", cert, "--key", key}, tc.args...)
			// A serve that starts is stopped after a while: it must not.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			code := Main(ctx, Env{Args: args, Stdout: stdout, Stderr: stderr})
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.refused) || !strings.Contains(stderr.String(), cert) {
				t.Errorf("exit %d, want %d saying %q of %s\n%s%s", code, ExitUsage, tc.refused, cert, stdout.String(), stderr.String())
			}
		})
	}

	t.Run("expires soon", func(t *testing.T) {
		cert, key := writeCert(t, t.TempDir(), now.Add(-time.Hour), now.Add(10*24*time.Hour+time.Hour), "localhost", "mirror.internal")
		ctx, cancel := context.WithCancel(context.Background())
		stdout, stderr := &syncBuffer{}, &syncBuffer{}
		exited := make(chan int, 1)
		go func() {
			exited <- Main(ctx, Env{Args: []string{"serve", site, "--listen", "127.0.0.1:0", "--cert", cert, "--key", key, "--hostname", "mirror.internal"}, Stdout: stdout, Stderr: stderr})
		}()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "serving ") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		}
		cancel()
		code := <-exited
		out := stdout.String() + stderr.String()
		if code != ExitOK || !strings.Contains(out, "serving ") || !strings.Contains(out, "expires on") || !strings.Contains(out, "in 10 days") {
			t.Errorf("exit %d, want it served with a warning that the certificate expires in 10 days:\n%s", code, out)
		}
	})
}

// Listening on every address, serve names a host clients can reach in its
// URL and client configuration (never "[::]"): the first --hostname, else
// the first name of the operator's certificate, else localhost with a
// warning that the certificate it made covers no other name.
func TestServeOnEveryAddressNamesAHost(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	cert, key := writeCert(t, t.TempDir(), time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour), "*.internal", "mirror.internal", "localhost")
	for _, tc := range []struct {
		args []string
		host string
		warn bool
	}{
		{[]string{"--listen", "0.0.0.0:0"}, "localhost", true},
		{[]string{"--listen", ":0"}, "localhost", true},
		{[]string{"--listen", "0.0.0.0:0", "--hostname", "mirror.example.com"}, "mirror.example.com", false},
		{[]string{"--listen", "[::]:0", "--cert", cert, "--key", key}, "mirror.internal", false},
		{[]string{"--listen", "127.0.0.1:0"}, "127.0.0.1", false},
		// A specific address the certificate is not for: the name it is.
		{[]string{"--listen", "127.0.0.1:0", "--hostname", "mirror.example.com"}, "mirror.example.com", false},
		{[]string{"--listen", "127.0.0.1:0", "--cert", cert, "--key", key}, "mirror.internal", false},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		stdout, stderr := &syncBuffer{}, &syncBuffer{}
		exited := make(chan int, 1)
		go func() {
			exited <- Main(ctx, Env{Args: append([]string{"serve", site}, tc.args...), Stdout: stdout, Stderr: stderr})
		}()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "url = ") && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		}
		cancel()
		code := <-exited
		out := stdout.String() + stderr.String()
		want := regexp.MustCompile(`serving \S+ at https://` + regexp.QuoteMeta(tc.host) + `:\d+/(?s:.*)url = "https://` + regexp.QuoteMeta(tc.host) + `:\d+/"`)
		if code != ExitOK || !want.MatchString(out) || strings.Contains(out, "[::]") || strings.Contains(out, "0.0.0.0") {
			t.Errorf("serve %v: exit %d, want the URL and client configuration on %s:\n%s", tc.args, code, tc.host, out)
		}
		if got := strings.Contains(out, "pass --hostname"); got != tc.warn {
			t.Errorf("serve %v: warned %v, want %v:\n%s", tc.args, got, tc.warn, out)
		}
	}
}

func TestServeRefusesBadAddresses(t *testing.T) {
	o := newOrigin(t)
	site := builtSite(t, o)
	for _, args := range [][]string{
		{"--listen", "bogus"},
		{"--listen", "127.0.0.1:99999"},
		{"--listen", "127.0.0.1:http-alt"},
		{"--listen", "bad host!:8443"},
		{"--hostname", "bad name!"},
		{"--hostname", ""},
		{"--hostname", "-mirror.example.com"},
	} {
		// Bounded: a serve that took the address would run until stopped.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var stdout, stderr bytes.Buffer
		code := Main(ctx, Env{Args: append([]string{"serve", site, "--listen", "127.0.0.1:0"}, args...), Stdout: &stdout, Stderr: &stderr})
		cancel()
		if code != ExitUsage {
			t.Errorf("serve %q: exit %d, want %d\n%s%s", args, code, ExitUsage, stdout.String(), stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(site, ".tfmirror", "serve-ca.pem")); !os.IsNotExist(err) {
		t.Errorf("a refused serve wrote its CA: %v", err)
	}
}

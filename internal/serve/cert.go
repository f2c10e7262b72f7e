package serve

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// CA is a certificate authority serve made, kept so that clients that
// trust it keep trusting the server across restarts.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a certificate authority valid for validFor.
func NewCA(validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "tfmirror serve CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key}, nil
}

// ParseCA reads a CA that PEM wrote: a certificate authority's
// certificate and the private key that goes with it.
func ParseCA(data []byte) (*CA, error) {
	var cert *x509.Certificate
	var key *ecdsa.PrivateKey
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		var err error
		switch block.Type {
		case "CERTIFICATE":
			cert, err = x509.ParseCertificate(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.ToLower(block.Type), err)
		}
	}
	switch {
	case cert == nil || key == nil:
		return nil, errors.New("want a PEM certificate and its EC private key")
	case !cert.IsCA:
		return nil, errors.New("the certificate is not a certificate authority's")
	case !key.PublicKey.Equal(cert.PublicKey):
		return nil, errors.New("the private key is not the certificate's")
	}
	return &CA{Cert: cert, key: key}, nil
}

// CertPEM is the CA's certificate in PEM, for clients to trust.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// PEM is the CA's certificate and private key in PEM, for ParseCA: a
// secret.
func (ca *CA) PEM() ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return nil, err
	}
	return append(ca.CertPEM(), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})...), nil
}

// Issue makes a server certificate for hosts (names or IP addresses),
// signed by the CA, valid for validFor but not past the CA.
func (ca *CA) Issue(hosts []string, validFor time.Duration) (tls.Certificate, error) {
	if len(hosts) == 0 {
		return tls.Certificate{}, errors.New("a server certificate needs a host name")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	until := now.Add(validFor)
	if until.After(ca.Cert.NotAfter) {
		until = ca.Cert.NotAfter
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     until,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			leaf.IPAddresses = append(leaf.IPAddresses, ip)
		} else {
			leaf.DNSNames = append(leaf.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("create server certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key}, nil
}

// SelfSigned makes a certificate authority and a server certificate for
// hosts (names or IP addresses), valid for validFor. It returns the CA
// certificate in PEM, for clients to trust, and the server certificate.
func SelfSigned(hosts []string, validFor time.Duration) ([]byte, tls.Certificate, error) {
	ca, err := NewCA(validFor)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	cert, err := ca.Issue(hosts, validFor)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return ca.CertPEM(), cert, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

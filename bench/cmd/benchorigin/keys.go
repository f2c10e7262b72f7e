package main

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/tfmirror/tfmirror/internal/serve"
)

// signer is the origin's throwaway OpenPGP key, made at startup.
type signer struct {
	entity      *openpgp.Entity
	KeyID       string    // 16 uppercase hex digits
	Fingerprint string    // 40 uppercase hex digits
	Created     time.Time // UTC; the key never expires
	Armored     string    // ASCII-armored public key
}

func newSigner() (*signer, error) {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048}
	e, err := openpgp.NewEntity("benchorigin", "throwaway benchmark key", "benchorigin@example.invalid", cfg)
	if err != nil {
		return nil, fmt.Errorf("make OpenPGP key: %w", err)
	}
	return signerOf(e)
}

// loadSigner reads a key writePrivate wrote.
func loadSigner(path string) (*signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	ring, err := openpgp.ReadArmoredKeyRing(f)
	if err != nil {
		return nil, fmt.Errorf("read OpenPGP key %s: %w", path, err)
	}
	if len(ring) != 1 || ring[0].PrivateKey == nil {
		return nil, fmt.Errorf("%s: want one private key", path)
	}
	return signerOf(ring[0])
}

// writePrivate writes the private key, armored, to path (mode 0600): a
// generated corpus whose signatures it made keeps it, so that the origin
// serving that corpus later advertises the same key.
func (s *signer) writePrivate(path string) error {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	if err != nil {
		return err
	}
	if err := s.entity.SerializePrivateWithoutSigning(w, nil); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

func signerOf(e *openpgp.Entity) (*signer, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return &signer{
		entity:      e,
		KeyID:       strings.ToUpper(e.PrimaryKey.KeyIdString()),
		Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)),
		Created:     e.PrimaryKey.CreationTime.UTC(),
		Armored:     buf.String(),
	}, nil
}

// sign returns a binary detached signature of data.
func (s *signer) sign(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, s.entity, bytes.NewReader(data), nil); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	return buf.Bytes(), nil
}

// newTLS makes a throwaway CA and a certificate it signs for 127.0.0.1 and
// localhost, valid for a week. It returns the server configuration and the
// CA certificate as PEM (for SSL_CERT_FILE and curl --cacert).
func newTLS() (*tls.Config, []byte, error) {
	caPEM, cert, err := serve.SelfSigned([]string{"127.0.0.1", "localhost"}, 7*24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, caPEM, nil
}

package fakeregistry

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// newEntities makes the registry's two throwaway keys: the signing key,
// RSA 2048 as most registries use, and the other key, Ed25519, which takes
// no time to make.
func newEntities(t testing.TB) (signer, other *openpgp.Entity) {
	t.Helper()
	signer, err := makeEntity(packet.PubKeyAlgoRSA)
	if err == nil {
		other, err = makeEntity(packet.PubKeyAlgoEdDSA)
	}
	if err != nil {
		t.Fatalf("fakeregistry: make OpenPGP key: %v", err)
	}
	return signer, other
}

// makeEntity makes a throwaway OpenPGP key (v4) of the given algorithm.
func makeEntity(algo packet.PublicKeyAlgorithm) (*openpgp.Entity, error) {
	cfg := &packet.Config{Algorithm: algo, RSABits: 2048}
	return openpgp.NewEntity("fakeregistry", "test only", "fakeregistry@example.invalid", cfg)
}

// keyID returns the 16 uppercase hex chars of the entity's primary key ID.
func keyID(e *openpgp.Entity) string {
	return strings.ToUpper(e.PrimaryKey.KeyIdString())
}

// armoredKey returns the entity's public key as a "PGP PUBLIC KEY BLOCK".
func armoredKey(t testing.TB, e *openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatalf("fakeregistry: armor: %v", err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatalf("fakeregistry: serialize public key: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("fakeregistry: armor: %v", err)
	}
	return buf.String()
}

// sign returns a binary detached signature of data by e.
func sign(e *openpgp.Entity, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, e, bytes.NewReader(data), nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

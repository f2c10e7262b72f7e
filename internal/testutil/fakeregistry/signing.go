package fakeregistry

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// newEntity makes a throwaway RSA 2048 OpenPGP key.
func newEntity(t testing.TB) *openpgp.Entity {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048}
	e, err := openpgp.NewEntity("fakeregistry", "test only", "fakeregistry@example.invalid", cfg)
	if err != nil {
		t.Fatalf("fakeregistry: make OpenPGP key: %v", err)
	}
	return e
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

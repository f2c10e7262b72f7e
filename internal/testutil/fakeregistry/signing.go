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

// SignWith makes a version's SHA256SUMS.sig the signature sig made of its
// SHA256SUMS, and its download documents advertise armoredKeys (in that
// order) instead of the registry key: a release signed by keys the test
// made, as a registry does across a key rotation or re-issue. Calling it
// again replaces both. Call it after the version's last Add, which signs
// with the registry key again.
func (r *Registry) SignWith(namespace, typ, ver string, sig func(sums []byte) []byte, armoredKeys ...string) {
	r.t.Helper()
	keys := make([]gpgKey, 0, len(armoredKeys))
	for _, a := range armoredKeys {
		ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(a))
		if err != nil || len(ring) == 0 {
			r.t.Fatalf("fakeregistry: read a key to advertise for %s/%s %s: %d keys, %v", namespace, typ, ver, len(ring), err)
		}
		keys = append(keys, gpgKey{KeyID: keyID(ring[0]), ASCIIArmor: a})
	}
	sums := r.SHA256SUMS(namespace, typ, ver)
	if sums == nil {
		r.t.Fatalf("fakeregistry: SignWith: no version %s/%s %s", namespace, typ, ver)
	}
	signature := sig(sums)
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.version(namespace, typ, ver, false)
	v.sig, v.keys = signature, keys
}

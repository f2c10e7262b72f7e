package signing

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// SigningKey is an operator's OpenPGP private key, ready to make detached
// signatures (of a bundle's manifest, for one).
type SigningKey struct {
	entity *openpgp.Entity
}

// ReadSigningKey reads an ASCII-armored private key. The first key in the
// block that holds private material is used. Keys protected by a
// passphrase are refused: tfmirror never asks for secrets.
func ReadSigningKey(armored []byte) (*SigningKey, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	for _, e := range ring {
		if e.PrivateKey == nil {
			continue
		}
		key, ok := e.SigningKey(time.Now())
		if !ok {
			return nil, fmt.Errorf("signing key %s has no usable signing key (expired or revoked?)", signerOf(e, nil, false).KeyID)
		}
		if key.PrivateKey == nil {
			return nil, fmt.Errorf("signing key %s: the private part of its signing key is missing", signerOf(e, nil, false).KeyID)
		}
		if key.PrivateKey.Encrypted {
			return nil, fmt.Errorf("signing key %s is protected by a passphrase; export it without one for tfmirror", signerOf(e, nil, false).KeyID)
		}
		return &SigningKey{entity: e}, nil
	}
	return nil, errors.New("read signing key: the file holds no private key (an ASCII-armored PGP PRIVATE KEY BLOCK is needed)")
}

// KeyID is the 16-digit ID of the key's primary key, as Signer reports it.
func (k *SigningKey) KeyID() string { return signerOf(k.entity, nil, false).KeyID }

// SignDetached returns a binary detached signature of doc.
func (k *SigningKey) SignDetached(doc []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, k.entity, bytes.NewReader(doc), nil); err != nil {
		return nil, fmt.Errorf("sign with key %s: %w", k.KeyID(), err)
	}
	return buf.Bytes(), nil
}

// TrustedKeys are public keys an operator trusts to sign what tfmirror
// checks with VerifyDetached (a bundle's manifest, for one).
type TrustedKeys struct {
	ring openpgp.EntityList
}

// ReadTrustedKeys reads one or more ASCII-armored public keys: several
// keys in one block, or several blocks one after the other (key files
// concatenated).
func ReadTrustedKeys(armored []byte) (*TrustedKeys, error) {
	const begin = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
	blocks := [][]byte{armored}
	if parts := bytes.Split(armored, []byte(begin)); len(parts) > 2 {
		blocks = blocks[:0]
		for _, p := range parts[1:] {
			blocks = append(blocks, append([]byte(begin), p...))
		}
	}
	var ring openpgp.EntityList
	for _, block := range blocks {
		keys, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(block))
		if err != nil {
			return nil, fmt.Errorf("read trusted keys: %w", err)
		}
		ring = append(ring, keys...)
	}
	if len(ring) == 0 {
		return nil, errors.New("read trusted keys: no key found")
	}
	return &TrustedKeys{ring: ring}, nil
}

// VerifyDetached checks that sig is a valid binary detached signature over
// doc by one of the keys. Unlike Verify, which follows OpenTofu's rules for
// registry keys, an expired or revoked key is an error: these keys belong
// to the operator, who can renew them.
func (k *TrustedKeys) VerifyDetached(doc, sig []byte) (Signer, error) {
	entity, err := openpgp.CheckDetachedSignature(k.ring, bytes.NewReader(doc), bytes.NewReader(sig), nil)
	if errors.Is(err, pgperrors.ErrUnknownIssuer) {
		return Signer{}, fmt.Errorf("verify signature: made by key %s, which is not one of the trusted keys (%s): %w", issuerOf(sig), strings.Join(k.KeyIDs(), ", "), err)
	}
	if errors.Is(err, pgperrors.ErrKeyExpired) || errors.Is(err, pgperrors.ErrSignatureExpired) {
		return Signer{}, fmt.Errorf("verify signature: made by %s, which is no longer current: %w", k.expiredText(sig), err)
	}
	if err != nil {
		return Signer{}, fmt.Errorf("verify signature: %w", err)
	}
	return signerOf(entity, nil, false), nil
}

// expiredText names the trusted key that made sig, and when it stopped
// being current, as far as the signature and the key say.
func (k *TrustedKeys) expiredText(sig []byte) string {
	p, err := packet.Read(bytes.NewReader(sig))
	s, ok := p.(*packet.Signature)
	if err != nil || !ok || s.IssuerKeyId == nil {
		return "key " + issuerOf(sig)
	}
	keys := k.ring.KeysById(*s.IssuerKeyId)
	if len(keys) == 0 {
		return "key " + issuerOf(sig)
	}
	return keyText(signerOf(keys[0].Entity, s, true))
}

// keyText names a signer by its key ID and, when it has one, its expiry.
func keyText(s Signer) string {
	if s.Expires.IsZero() {
		return "key " + s.KeyID
	}
	return fmt.Sprintf("key %s (expired %s)", s.KeyID, s.Expires.UTC().Format(time.DateOnly))
}

// KeyIDs are the trusted keys' primary key ids, in upper-case hex.
func (k *TrustedKeys) KeyIDs() []string {
	ids := make([]string, 0, len(k.ring))
	for _, e := range k.ring {
		ids = append(ids, strings.ToUpper(e.PrimaryKey.KeyIdString()))
	}
	return ids
}

// issuerOf is the id of the key a binary detached signature names as its
// issuer, or "(unnamed)".
func issuerOf(sig []byte) string {
	p, err := packet.Read(bytes.NewReader(sig))
	if s, ok := p.(*packet.Signature); err == nil && ok && s.IssuerKeyId != nil {
		return fmt.Sprintf("%016X", *s.IssuerKeyId)
	}
	return "(unnamed)"
}

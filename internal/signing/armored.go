package signing

import (
	"bytes"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
)

// SignArmored returns an ASCII-armored detached signature of doc, the form
// "gpg --armor --detach-sign" writes (a mirror's catalog.json.asc).
func (k *SigningKey) SignArmored(doc []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&buf, k.entity, bytes.NewReader(doc), nil); err != nil {
		return nil, fmt.Errorf("sign with key %s: %w", k.KeyID(), err)
	}
	return buf.Bytes(), nil
}

// Signs reports whether sig is a valid ASCII-armored detached signature
// of doc by this key: whether a signature already in place still vouches
// for doc, so that it need not be made again.
func (k *SigningKey) Signs(doc, sig []byte) bool {
	_, err := openpgp.CheckArmoredDetachedSignature(openpgp.EntityList{k.entity}, bytes.NewReader(doc), bytes.NewReader(sig), nil)
	return err == nil
}

// VerifyArmored is VerifyDetached for an ASCII-armored signature.
func (k *TrustedKeys) VerifyArmored(doc, sig []byte) (Signer, error) {
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		return Signer{}, fmt.Errorf("verify signature: %w", err)
	}
	if block.Type != openpgp.SignatureType {
		return Signer{}, fmt.Errorf("verify signature: an armored %s, not a signature", block.Type)
	}
	binary, err := io.ReadAll(io.LimitReader(block.Body, int64(len(sig))))
	if err != nil {
		return Signer{}, fmt.Errorf("verify signature: %w", err)
	}
	return k.VerifyDetached(doc, binary)
}

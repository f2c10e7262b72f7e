package signing

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"

	"github.com/tfmirror/tfmirror/mirror"
)

// Signer describes the key that verified a signature.
type Signer struct {
	KeyID       string // 16 uppercase hex digits, as OpenTofu prints it
	Fingerprint string // 40 uppercase hex digits of the primary key
	Expired     bool   // the key or signature has expired; OpenTofu accepts it with a warning
}

// ErrUnknownIssuer means none of the offered keys made the signature.
var ErrUnknownIssuer = errors.New("signature was not made by any of the advertised signing keys")

// Verify checks that sig is a valid binary detached signature over doc by
// one of the ASCII-armored public keys. Keys that do not parse are an error;
// a signature by none of them is ErrUnknownIssuer.
func Verify(doc, sig []byte, armoredKeys []string) (Signer, error) {
	if len(armoredKeys) == 0 {
		return Signer{}, fmt.Errorf("verify signature: no signing keys")
	}
	var expired *openpgp.Entity
	for i, armored := range armoredKeys {
		ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
		if err != nil {
			return Signer{}, fmt.Errorf("read signing key %d: %w", i+1, err)
		}
		entity, err := openpgp.CheckDetachedSignature(ring, bytes.NewReader(doc), bytes.NewReader(sig), nil)
		switch {
		case err == nil:
			return signerOf(entity, false), nil
		case errors.Is(err, pgperrors.ErrKeyExpired) || errors.Is(err, pgperrors.ErrSignatureExpired):
			if entity == nil && len(ring) > 0 {
				entity = ring[0]
			}
			expired = entity
		case errors.Is(err, pgperrors.ErrUnknownIssuer):
			continue
		default:
			return Signer{}, fmt.Errorf("verify signature with key %d: %w", i+1, err)
		}
	}
	if expired != nil {
		return signerOf(expired, true), nil
	}
	return Signer{}, ErrUnknownIssuer
}

func signerOf(e *openpgp.Entity, expired bool) Signer {
	return Signer{
		KeyID:       strings.ToUpper(e.PrimaryKey.KeyIdString()),
		Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)),
		Expired:     expired,
	}
}

// Checker implements mirror.SignatureChecker with Verify.
type Checker struct{}

var _ mirror.SignatureChecker = Checker{}

// CheckSignature verifies sig over doc with one of armoredKeys.
func (Checker) CheckSignature(doc, sig []byte, armoredKeys []string) (mirror.Signer, error) {
	s, err := Verify(doc, sig, armoredKeys)
	if err != nil {
		return mirror.Signer{}, err
	}
	return mirror.Signer{KeyID: s.KeyID, Fingerprint: s.Fingerprint, Expired: s.Expired}, nil
}

// KeyID is the 16-digit upper-case ID of an armored key's primary key, as
// registries advertise it.
func KeyID(armored string) (string, error) {
	ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
	if err != nil {
		return "", err
	}
	if len(ring) == 0 {
		return "", errors.New("no key in the armored block")
	}
	return strings.ToUpper(ring[0].PrimaryKey.KeyIdString()), nil
}

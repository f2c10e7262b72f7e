package signing

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/tfmirror/tfmirror/mirror"
)

// Signer describes the key that verified a signature.
type Signer struct {
	KeyID       string // 16 uppercase hex digits, as OpenTofu prints it
	Fingerprint string // 40 uppercase hex digits of the primary key
	Expired     bool   // the key or signature has expired; OpenTofu accepts it with a warning
	// Expires is when the key (as its newest self-signature says), the
	// signing subkey or the signature itself expires, the earliest of
	// them; zero when none does.
	Expires time.Time
}

// ErrUnknownIssuer means none of the offered keys made the signature.
var ErrUnknownIssuer = errors.New("signature was not made by any of the advertised signing keys")

// Verify checks that sig is a valid binary detached signature over doc by
// one of the ASCII-armored public keys, tried in order, as OpenTofu does.
// Keys that do not parse are an error; a signature by none of them is
// ErrUnknownIssuer. A signature by an expired key is no error: the Signer
// says it expired, and when.
//
// A key can be offered in several forms (registries re-issue a key with a
// new self-signature that moves its expiry, and may serve the old and the
// new form side by side, in one block or two): every form of the same
// primary key is read as one key (Forms), so the newest self-signature
// decides whether it has expired, and a revocation in any form revokes it.
func Verify(doc, sig []byte, armoredKeys []string) (Signer, error) {
	if len(armoredKeys) == 0 {
		return Signer{}, fmt.Errorf("verify signature: no signing keys")
	}
	forms := readForms(armoredKeys)
	var expired *Signer
	for i, armored := range armoredKeys {
		ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
		if err != nil {
			return Signer{}, fmt.Errorf("read signing key %d: %w", i+1, err)
		}
		sigPacket, entity, err := openpgp.VerifyDetachedSignature(forms.ring(ring), bytes.NewReader(doc), bytes.NewReader(sig), nil)
		switch {
		case err == nil:
			return signerOf(entity, sigPacket, false), nil
		case errors.Is(err, pgperrors.ErrKeyExpired) || errors.Is(err, pgperrors.ErrSignatureExpired):
			if expired == nil && entity != nil {
				s := signerOf(entity, sigPacket, true)
				expired = &s
			}
		case errors.Is(err, pgperrors.ErrUnknownIssuer):
			continue
		default:
			return Signer{}, fmt.Errorf("verify signature with key %d: %w", i+1, err)
		}
	}
	if expired != nil {
		return *expired, nil
	}
	return Signer{}, ErrUnknownIssuer
}

func signerOf(e *openpgp.Entity, sig *packet.Signature, expired bool) Signer {
	s := Signer{
		KeyID:       strings.ToUpper(e.PrimaryKey.KeyIdString()),
		Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)),
		Expired:     expired,
	}
	if sig != nil {
		s.Expires = expiry(e, sig)
	}
	return s
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
	return mirror.Signer{KeyID: s.KeyID, Fingerprint: s.Fingerprint, Expired: s.Expired, Expires: s.Expires}, nil
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

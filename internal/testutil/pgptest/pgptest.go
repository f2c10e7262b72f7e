// Package pgptest makes throwaway OpenPGP keys for tests: a key, its
// ASCII-armored public (and private) form, its key ID, and binary detached
// signatures, as release SHA256SUMS and bundle manifests are signed. Keys
// can be made with a chosen creation time and expiry, sign as of a chosen
// time, and be re-issued: the same key given a new self-signature with a
// later expiry, as registries extend their keys. Test use only.
package pgptest

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Key is a throwaway Ed25519 signing key.
type Key struct {
	Entity  *openpgp.Entity
	Armored string // the public key, ASCII-armored
	ID      string // 16 uppercase hex digits, as OpenTofu prints it
	// Fingerprint is the primary key's, 40 uppercase hex digits.
	Fingerprint string
}

// New makes a key named name.
func New(t testing.TB, name string) Key {
	t.Helper()
	return NewAt(t, name, time.Time{}, time.Time{})
}

// NewAt makes a key named name that says it was made at made (zero: now)
// and expires at expires (zero: never), as its self-signature says.
func NewAt(t testing.TB, name string, made, expires time.Time) Key {
	t.Helper()
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	if !made.IsZero() {
		cfg.Time = func() time.Time { return made }
	} else {
		made = time.Now()
	}
	if !expires.IsZero() {
		cfg.KeyLifetimeSecs = lifetime(t, made, expires)
	}
	e, err := openpgp.NewEntity(name, "", name+"@example.invalid", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return keyOf(t, e)
}

func keyOf(t testing.TB, e *openpgp.Entity) Key {
	t.Helper()
	return Key{
		Entity:      e,
		Armored:     Armor(t, openpgp.PublicKeyType, e.Serialize),
		ID:          strings.ToUpper(e.PrimaryKey.KeyIdString()),
		Fingerprint: strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)),
	}
}

// lifetime is an OpenPGP key lifetime: seconds from the key's creation.
func lifetime(t testing.TB, made, expires time.Time) uint32 {
	t.Helper()
	secs := expires.Sub(made) / time.Second
	if secs <= 0 || secs > 1<<32-1 {
		t.Fatalf("pgptest: expiry %s is not within 136 years after the key's creation %s", expires, made)
	}
	return uint32(secs)
}

// Reissue returns the same key (the same primary key material, so the
// same ID and fingerprint) with a new self-signature made at at that
// moves its expiry to expires (zero: never), as a registry extends its
// key: the new armored form holds both self-signatures, and OpenPGP
// readers take the newest. k itself is left as it was.
func (k Key) Reissue(t testing.TB, at, expires time.Time) Key {
	t.Helper()
	var buf bytes.Buffer
	if err := k.Entity.SerializePrivateWithoutSigning(&buf, nil); err != nil {
		t.Fatal(err)
	}
	ring, err := openpgp.ReadKeyRing(&buf)
	if err != nil || len(ring) != 1 {
		t.Fatalf("pgptest: copy key %s: %d keys, %v", k.ID, len(ring), err)
	}
	e := ring[0]
	var secs uint32
	if !expires.IsZero() {
		secs = lifetime(t, e.PrimaryKey.CreationTime, expires)
	}
	cfg := &packet.Config{Time: func() time.Time { return at }}
	for _, id := range e.Identities {
		sig := *id.SelfSignature
		sig.CreationTime, sig.KeyLifetimeSecs = at, &secs
		sig.Notations = slices.Clone(sig.Notations)
		if err := sig.SignUserId(id.UserId.Id, e.PrimaryKey, e.PrivateKey, cfg); err != nil {
			t.Fatalf("pgptest: re-issue key %s: %v", k.ID, err)
		}
		id.SelfSignature = &sig
		id.Signatures = append(id.Signatures, &sig)
	}
	return keyOf(t, e)
}

// Sign returns a binary detached signature over doc.
func (k Key) Sign(t testing.TB, doc []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, k.Entity, bytes.NewReader(doc), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// SignAt returns a binary detached signature over doc made as of at: the
// key must be valid then, and the signature says it was made then.
func (k Key) SignAt(t testing.TB, doc []byte, at time.Time) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, k.Entity, bytes.NewReader(doc), &packet.Config{Time: func() time.Time { return at }}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WriteFiles writes the ASCII-armored private and public keys into dir
// (named NAME.key.asc and NAME.pub.asc) and returns their paths.
func (k Key) WriteFiles(t testing.TB, dir, name string) (private, public string) {
	t.Helper()
	private = filepath.Join(dir, name+".key.asc")
	public = filepath.Join(dir, name+".pub.asc")
	priv := Armor(t, openpgp.PrivateKeyType, func(w io.Writer) error { return k.Entity.SerializePrivate(w, nil) })
	for path, data := range map[string]string{private: priv, public: k.Armored} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return private, public
}

// Armor ASCII-armors what serialize writes, as a blockType block.
func Armor(t testing.TB, blockType string, serialize func(io.Writer) error) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := serialize(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

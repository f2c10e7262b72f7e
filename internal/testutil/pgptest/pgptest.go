// Package pgptest makes throwaway OpenPGP keys for tests: a key, its
// ASCII-armored public (and private) form, its key ID, and binary detached
// signatures, as release SHA256SUMS and bundle manifests are signed.
// Test use only.
package pgptest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Key is a throwaway Ed25519 signing key.
type Key struct {
	Entity  *openpgp.Entity
	Armored string // the public key, ASCII-armored
	ID      string // 16 uppercase hex digits, as OpenTofu prints it
}

// New makes a key named name.
func New(t testing.TB, name string) Key {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.invalid", &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatal(err)
	}
	return Key{Entity: e, Armored: Armor(t, openpgp.PublicKeyType, e.Serialize), ID: strings.ToUpper(e.PrimaryKey.KeyIdString())}
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

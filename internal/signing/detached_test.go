package signing_test

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
)

// A detached signature by a key that is not trusted is refused, naming
// the key that made it and the keys that are trusted, so the operator can
// tell a wrong key file from a forged bundle.
func TestVerifyDetachedNamesTheSigner(t *testing.T) {
	signer, trusted := pgptest.New(t, "signer"), pgptest.New(t, "trusted")
	doc := []byte("manifest\n")
	sig := signer.Sign(t, doc)
	keys, err := signing.ReadTrustedKeys([]byte(trusted.Armored))
	if err != nil {
		t.Fatal(err)
	}
	_, err = keys.VerifyDetached(doc, sig)
	if err == nil || !strings.Contains(err.Error(), "made by key "+signer.ID) || !strings.Contains(err.Error(), "trusted keys ("+trusted.ID+")") {
		t.Errorf("a signature by an untrusted key: err = %v, want one naming %s and %s", err, signer.ID, trusted.ID)
	}
	both, err := signing.ReadTrustedKeys([]byte(trusted.Armored + signer.Armored))
	if err != nil {
		t.Fatal(err)
	}
	got, err := both.VerifyDetached(doc, sig)
	if err != nil || got.KeyID != signer.ID {
		t.Errorf("with the signer trusted: %v, %v; want the signer %s", got, err, signer.ID)
	}
	// The same for an armored signature (a catalog's, a change record's).
	armored := pgptest.Armor(t, openpgp.SignatureType, func(w io.Writer) error { _, err := w.Write(sig); return err })
	if _, err := keys.VerifyArmored(doc, []byte(armored)); err == nil || !strings.Contains(err.Error(), "made by key "+signer.ID) {
		t.Errorf("an armored signature by an untrusted key: err = %v, want one naming %s", err, signer.ID)
	}
	if got, err := both.VerifyArmored(doc, []byte(armored)); err != nil || got.KeyID != signer.ID {
		t.Errorf("an armored signature with the signer trusted: %v, %v", got, err)
	}
}

// A signature by a trusted key that has expired names the key and when
// it expired: "key expired" alone does not say which of the trusted keys
// to renew.
func TestVerifyDetachedNamesAnExpiredKey(t *testing.T) {
	made := time.Now().Add(-48 * time.Hour)
	expired := pgptest.NewAt(t, "expired", made, made.Add(24*time.Hour))
	doc := []byte("catalog\n")
	sig := expired.SignAt(t, doc, made.Add(time.Hour))
	keys, err := signing.ReadTrustedKeys([]byte(expired.Armored))
	if err != nil {
		t.Fatal(err)
	}
	_, err = keys.VerifyDetached(doc, sig)
	if err == nil || !strings.Contains(err.Error(), "made by key "+expired.ID) || !strings.Contains(err.Error(), "expired "+made.Add(24*time.Hour).UTC().Format(time.DateOnly)) {
		t.Errorf("a signature by an expired trusted key: err = %v, want one naming %s and its expiry", err, expired.ID)
	}
}

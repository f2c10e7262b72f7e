package signing_test

import (
	"io"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"

	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
)

func TestArmoredDetachedSignature(t *testing.T) {
	t.Parallel()
	k, other := pgptest.New(t, "operator"), pgptest.New(t, "other")
	key, err := signing.ReadSigningKey([]byte(pgptest.Armor(t, openpgp.PrivateKeyType, func(w io.Writer) error { return k.Entity.SerializePrivate(w, nil) })))
	if err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"providers": []}`)
	sig, err := key.SignArmored(doc)
	if err != nil {
		t.Fatal(err)
	}
	if block, err := armor.Decode(strings.NewReader(string(sig))); err != nil || block.Type != "PGP SIGNATURE" {
		t.Fatalf("SignArmored wrote no armored signature: %v", err)
	}
	if !key.Signs(doc, sig) || key.Signs(append(doc, ' '), sig) {
		t.Error("Signs does not tell its signature of these bytes from other bytes")
	}
	trusted, err := signing.ReadTrustedKeys([]byte(other.Armored + k.Armored))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := trusted.VerifyArmored(doc, sig); err != nil || got.KeyID != k.ID {
		t.Errorf("VerifyArmored = %+v, %v; want key %s", got, err, k.ID)
	}
	if _, err := trusted.VerifyArmored(append(doc, ' '), sig); err == nil {
		t.Error("VerifyArmored accepted a signature of other bytes")
	}
	otherOnly, err := signing.ReadTrustedKeys([]byte(other.Armored))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otherOnly.VerifyArmored(doc, sig); err == nil {
		t.Error("VerifyArmored accepted a signature by a key it does not hold")
	}
}

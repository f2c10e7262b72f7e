package signing_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/mirror"
)

var sums = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  terraform-provider-foo_1.0.0_linux_amd64.zip\n")

// keyConfig makes Ed25519 keys, which are quick to generate; at, if not
// zero, is the time the key claims to have been made.
func keyConfig(at time.Time, lifetime time.Duration) *packet.Config {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, KeyLifetimeSecs: uint32(lifetime / time.Second)}
	if !at.IsZero() {
		cfg.Time = func() time.Time { return at }
	}
	return cfg
}

func newEntity(t *testing.T, cfg *packet.Config) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity("signing test", "", "test@example.invalid", cfg)
	if err != nil {
		t.Fatalf("NewEntity: %v", err)
	}
	return e
}

func newKey(t *testing.T) *openpgp.Entity {
	t.Helper()
	return newEntity(t, keyConfig(time.Time{}, 0))
}

// armored returns the public keys of entities as one ASCII-armored block.
func armored(t *testing.T, entities ...*openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entities {
		if err := e.Serialize(w); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// sign returns a binary detached signature of doc by e, made at the time
// cfg says (nil: now).
func sign(t *testing.T, e *openpgp.Entity, doc []byte, cfg *packet.Config) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := openpgp.DetachSign(&buf, e, bytes.NewReader(doc), cfg); err != nil {
		t.Fatalf("DetachSign: %v", err)
	}
	return buf.Bytes()
}

// keyID is the primary key's ID as OpenTofu prints it.
func keyID(e *openpgp.Entity) string {
	return fmt.Sprintf("%016X", e.PrimaryKey.KeyId)
}

var hexKeyID = regexp.MustCompile(`^[0-9A-F]{16}$`)

func TestVerifyValidSignature(t *testing.T) {
	t.Parallel()
	e := newKey(t)
	got, err := signing.Verify(sums, sign(t, e, sums, nil), []string{armored(t, e)})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.KeyID != keyID(e) || !hexKeyID.MatchString(got.KeyID) {
		t.Errorf("KeyID = %q, want %q (16 uppercase hex digits)", got.KeyID, keyID(e))
	}
	if got.Expired {
		t.Errorf("Expired = true for a current key")
	}
}

func TestVerifyUnknownIssuer(t *testing.T) {
	t.Parallel()
	signer, other := newKey(t), newKey(t)
	sig := sign(t, signer, sums, nil)
	for _, keys := range [][]string{
		{armored(t, other)},
		{armored(t, other), armored(t, newKey(t))},
	} {
		_, err := signing.Verify(sums, sig, keys)
		if !errors.Is(err, signing.ErrUnknownIssuer) {
			t.Errorf("Verify with %d other keys: %v, want ErrUnknownIssuer", len(keys), err)
		}
	}
}

func TestVerifySecondKeySigns(t *testing.T) {
	t.Parallel()
	first, second := newKey(t), newKey(t)
	sig := sign(t, second, sums, nil)

	got, err := signing.Verify(sums, sig, []string{armored(t, first), armored(t, second)})
	if err != nil {
		t.Fatalf("Verify with the signer second: %v", err)
	}
	if got.KeyID != keyID(second) {
		t.Errorf("KeyID = %s, want the second key's %s", got.KeyID, keyID(second))
	}

	// Two keys in one armored block work too.
	got, err = signing.Verify(sums, sig, []string{armored(t, first, second)})
	if err != nil {
		t.Fatalf("Verify with a two-key block: %v", err)
	}
	if got.KeyID != keyID(second) {
		t.Errorf("KeyID = %s, want the second key's %s", got.KeyID, keyID(second))
	}
}

func TestVerifySigningSubkeyReportsPrimaryKeyID(t *testing.T) {
	t.Parallel()
	e := newKey(t)
	if err := e.AddSigningSubkey(keyConfig(time.Time{}, 0)); err != nil {
		t.Fatalf("AddSigningSubkey: %v", err)
	}
	sig := sign(t, e, sums, nil)
	p, err := packet.Read(bytes.NewReader(sig))
	if err != nil {
		t.Fatal(err)
	}
	if issuer := *p.(*packet.Signature).IssuerKeyId; issuer == e.PrimaryKey.KeyId {
		t.Fatalf("signature was made by the primary key; the test wants the subkey")
	}
	got, err := signing.Verify(sums, sig, []string{armored(t, e)})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.KeyID != keyID(e) {
		t.Errorf("KeyID = %s, want the primary key's %s, as OpenTofu reports", got.KeyID, keyID(e))
	}
}

func TestVerifyExpired(t *testing.T) {
	t.Parallel()
	// go-crypto's CheckDetachedSignature returns the signer together with
	// ErrKeyExpired (key past its lifetime) or ErrSignatureExpired (signature
	// past its own lifetime). OpenTofu accepts both with a warning unless
	// OPENTOFU_ENFORCE_GPG_EXPIRATION is set; Verify reports Expired.
	made := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	then := &packet.Config{Time: func() time.Time { return made.Add(time.Hour) }}

	t.Run("key", func(t *testing.T) {
		e := newEntity(t, keyConfig(made, 24*time.Hour))
		got, err := signing.Verify(sums, sign(t, e, sums, then), []string{armored(t, e)})
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if got != (signing.Signer{KeyID: keyID(e), Fingerprint: fingerprint(e), Expired: true, Expires: made.Add(24 * time.Hour).UTC()}) {
			t.Errorf("Verify = %+v, want KeyID %s, Expired, expiring a day after %s", got, keyID(e), made)
		}
	})
	t.Run("signature", func(t *testing.T) {
		e := newEntity(t, keyConfig(made, 0))
		cfg := &packet.Config{Time: then.Time, SigLifetimeSecs: 60}
		got, err := signing.Verify(sums, sign(t, e, sums, cfg), []string{armored(t, e)})
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if got != (signing.Signer{KeyID: keyID(e), Fingerprint: fingerprint(e), Expired: true, Expires: made.Add(time.Hour + time.Minute).UTC()}) {
			t.Errorf("Verify = %+v, want KeyID %s, Expired, the signature expiring a minute after it was made", got, keyID(e))
		}
	})
	t.Run("still valid", func(t *testing.T) {
		e := newEntity(t, keyConfig(made, 365*24*time.Hour))
		got, err := signing.Verify(sums, sign(t, e, sums, then), []string{armored(t, e)})
		if err != nil || got.Expired {
			t.Errorf("Verify = %+v, %v; want a current signature", got, err)
		}
	})
	t.Run("expired tampered", func(t *testing.T) {
		// Expiry does not excuse a bad signature.
		e := newEntity(t, keyConfig(made, 24*time.Hour))
		sig := sign(t, e, sums, then)
		_, err := signing.Verify(append([]byte("x"), sums...), sig, []string{armored(t, e)})
		if err == nil {
			t.Fatal("Verify accepted an expired key's signature over other bytes")
		}
	})
}

func TestVerifyPrefersCurrentKeyOverExpired(t *testing.T) {
	t.Parallel()
	// A signature file may hold several signatures. When an expired key and
	// a current key both signed, the current one is reported.
	made := time.Now().Add(-30 * 24 * time.Hour)
	old := newEntity(t, keyConfig(made, 24*time.Hour))
	current := newKey(t)
	sig := append(sign(t, old, sums, &packet.Config{Time: func() time.Time { return made.Add(time.Hour) }}), sign(t, current, sums, nil)...)

	got, err := signing.Verify(sums, sig, []string{armored(t, old), armored(t, current)})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got != (signing.Signer{KeyID: keyID(current), Fingerprint: fingerprint(current)}) {
		t.Errorf("Verify = %+v, want the current key %s, not expired", got, keyID(current))
	}
}

func TestVerifyRevokedKey(t *testing.T) {
	t.Parallel()
	e := newKey(t)
	sig := sign(t, e, sums, nil)
	if err := e.RevokeKey(packet.KeyCompromised, "test", nil); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	_, err := signing.Verify(sums, sig, []string{armored(t, e)})
	if !errors.Is(err, pgperrors.ErrKeyRevoked) {
		t.Errorf("Verify with a revoked key: %v, want ErrKeyRevoked", err)
	}
}

func TestVerifyErrors(t *testing.T) {
	t.Parallel()
	e := newKey(t)
	key := armored(t, e)
	sig := sign(t, e, sums, nil)
	var armoredSig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&armoredSig, e, bytes.NewReader(sums), nil); err != nil {
		t.Fatal(err)
	}
	truncated := sig[:len(sig)/2]

	tests := []struct {
		name string
		doc  []byte
		sig  []byte
		keys []string
		want string
	}{
		{"no keys", sums, sig, nil, "no signing keys"},
		{"empty key list", sums, sig, []string{}, "no signing keys"},
		{"garbage key", sums, sig, []string{"not a key"}, "read signing key 1"},
		{"garbage second key", sums, sig, []string{key, "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n"}, ""},
		{"garbage signature", sums, []byte("this is not a signature"), []string{key}, "verify signature with key 1"},
		{"truncated signature", sums, truncated, []string{key}, "verify signature with key 1"},
		{"armored signature", sums, armoredSig.Bytes(), []string{key}, "verify signature with key 1"},
		{"signature over other bytes", append([]byte("tampered "), sums...), sig, []string{key}, "verify signature with key 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := signing.Verify(tt.doc, tt.sig, tt.keys)
			if tt.want == "" {
				// A valid key before a broken one: the first verifies.
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if errors.Is(err, signing.ErrUnknownIssuer) {
				t.Errorf("error %q must not read as an unknown issuer", err)
			}
		})
	}
}

func TestVerifyEmptySignatureIsUnknownIssuer(t *testing.T) {
	t.Parallel()
	// go-crypto finds no signature packet at all in an empty file and
	// reports ErrUnknownIssuer, as it does for OpenTofu.
	e := newKey(t)
	_, err := signing.Verify(sums, nil, []string{armored(t, e)})
	if !errors.Is(err, signing.ErrUnknownIssuer) {
		t.Errorf("Verify with an empty signature: %v, want ErrUnknownIssuer", err)
	}
}

func TestVerifyKeyBlockWithoutKeys(t *testing.T) {
	t.Parallel()
	// go-crypto reads an armored block holding no key as an empty key ring
	// without error, so such a "key" signs nothing: the result is
	// ErrUnknownIssuer, as in OpenTofu.
	e := newKey(t)
	empty := "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n"
	_, err := signing.Verify(sums, sign(t, e, sums, nil), []string{empty})
	if !errors.Is(err, signing.ErrUnknownIssuer) {
		t.Errorf("Verify with an empty key block: %v, want ErrUnknownIssuer", err)
	}
}

func TestChecker(t *testing.T) {
	t.Parallel()
	var c mirror.SignatureChecker = signing.Checker{}
	e, other := newKey(t), newKey(t)
	sig := sign(t, e, sums, nil)

	got, err := c.CheckSignature(sums, sig, []string{armored(t, other), armored(t, e)})
	if err != nil {
		t.Fatalf("CheckSignature: %v", err)
	}
	if want := (mirror.Signer{KeyID: keyID(e), Fingerprint: fingerprint(e)}); got != want {
		t.Errorf("CheckSignature = %+v, want %+v", got, want)
	}

	made := time.Now().Add(-30 * 24 * time.Hour).Truncate(time.Second)
	old := newEntity(t, keyConfig(made, time.Hour))
	got, err = c.CheckSignature(sums, sign(t, old, sums, &packet.Config{Time: func() time.Time { return made }}), []string{armored(t, old)})
	if err != nil {
		t.Fatalf("CheckSignature with an expired key: %v", err)
	}
	if want := (mirror.Signer{KeyID: keyID(old), Fingerprint: fingerprint(old), Expired: true, Expires: made.Add(time.Hour).UTC()}); got != want {
		t.Errorf("CheckSignature = %+v, want %+v", got, want)
	}

	got, err = c.CheckSignature(sums, sig, []string{armored(t, other)})
	if !errors.Is(err, signing.ErrUnknownIssuer) || got != (mirror.Signer{}) {
		t.Errorf("CheckSignature by an unknown key = %+v, %v; want zero Signer and ErrUnknownIssuer", got, err)
	}
}

func TestVerifyFakeRegistryRelease(t *testing.T) {
	t.Parallel()
	// The fake registry's RSA key and binary signature, as served.
	ca := testca.New(t)
	reg := fakeregistry.New(t, ca)
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	client := ca.Client()
	get := func(path string) []byte {
		t.Helper()
		resp, err := client.Get(reg.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s, %v", path, resp.Status, err)
		}
		return body
	}
	doc := reg.SHA256SUMS("hashicorp", "foo", "1.0.0")
	sig := get("/releases/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_SHA256SUMS.sig")

	got, err := signing.Verify(doc, sig, []string{reg.ArmoredKey})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.KeyID != reg.KeyID || !strings.HasSuffix(got.Fingerprint, reg.KeyID) || got.Expired {
		t.Errorf("Verify = %+v, want KeyID %s", got, reg.KeyID)
	}

	reg.BadSignature("hashicorp", "foo", "1.0.0")
	bad := get("/releases/hashicorp/foo/1.0.0/terraform-provider-foo_1.0.0_SHA256SUMS.sig")
	if _, err := signing.Verify(doc, bad, []string{reg.ArmoredKey}); !errors.Is(err, signing.ErrUnknownIssuer) {
		t.Errorf("Verify of a signature by another key: %v, want ErrUnknownIssuer", err)
	}
}

// fingerprint is the 40-digit uppercase fingerprint of e's primary key.
func fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}

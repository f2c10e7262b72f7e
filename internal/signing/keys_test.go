package signing_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
)

// Signing keys change shape over time without changing identity. These
// tests make each shape in the test: a rotation (a new key signs new
// releases), a re-issue (the same key, given a later expiry by a new
// self-signature) and an expired key.

var (
	sumsOld = []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  terraform-provider-foo_1.0.0_linux_amd64.zip\n")
	sumsNew = []byte("fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210  terraform-provider-foo_2.0.0_linux_amd64.zip\n")
)

// reissued is key K over time: made two years ago, expired 30 days ago
// (T1) after signing 1.0.0, then re-issued a day ago to expire in a year
// (T2) and signing 2.0.0 now.
type reissued struct {
	old, current pgptest.Key // K as armored before and after the re-issue
	t1, t2       time.Time
	sigOld       []byte // of sumsOld, made before T1
	sigNew       []byte // of sumsNew, made now by the re-issued K
}

func newReissued(t *testing.T) reissued {
	t.Helper()
	now := time.Now().Truncate(time.Second)
	made := now.Add(-2 * 365 * 24 * time.Hour)
	r := reissued{t1: now.Add(-30 * 24 * time.Hour), t2: now.Add(365 * 24 * time.Hour)}
	r.old = pgptest.NewAt(t, "K", made, r.t1)
	r.sigOld = r.old.SignAt(t, sumsOld, made.Add(24*time.Hour))
	r.current = r.old.Reissue(t, now.Add(-24*time.Hour), r.t2)
	r.sigNew = r.current.SignAt(t, sumsNew, now)
	if r.current.ID != r.old.ID || r.current.Fingerprint != r.old.Fingerprint || r.current.Armored == r.old.Armored {
		t.Fatalf("re-issue: %s %s -> %s %s, armored form changed: %t", r.old.ID, r.old.Fingerprint, r.current.ID, r.current.Fingerprint, r.current.Armored != r.old.Armored)
	}
	return r
}

// signer is what Verify must report for K.
func (r reissued) signer(expired bool, expires time.Time) signing.Signer {
	return signing.Signer{KeyID: r.old.ID, Fingerprint: r.old.Fingerprint, Expired: expired, Expires: expires}
}

// bothForms is one armored block holding K before and after the re-issue,
// in that order, as a registry that appends the new form may serve it.
func (r reissued) bothForms(t *testing.T) string {
	return pgptest.Armor(t, openpgp.PublicKeyType, func(w io.Writer) error {
		if err := r.old.Entity.Serialize(w); err != nil {
			return err
		}
		return r.current.Entity.Serialize(w)
	})
}

func TestVerifyReissuedKey(t *testing.T) {
	t.Parallel()
	r := newReissued(t)
	tests := []struct {
		name string
		doc  []byte
		sig  []byte
		keys []string
		want signing.Signer
	}{
		// The re-issued form vouches for what K signed before and after.
		{"old release, re-issued key", sumsOld, r.sigOld, []string{r.current.Armored}, r.signer(false, r.t2)},
		{"new release, re-issued key", sumsNew, r.sigNew, []string{r.current.Armored}, r.signer(false, r.t2)},
		// The old form alone says K expired at T1, for either signature.
		{"old release, old key", sumsOld, r.sigOld, []string{r.old.Armored}, r.signer(true, r.t1)},
		{"new release, old key", sumsNew, r.sigNew, []string{r.old.Armored}, r.signer(true, r.t1)},
		// Both forms offered: the newest self-signature decides.
		{"old and re-issued, two keys", sumsOld, r.sigOld, []string{r.old.Armored, r.current.Armored}, r.signer(false, r.t2)},
		{"re-issued and old, two keys", sumsOld, r.sigOld, []string{r.current.Armored, r.old.Armored}, r.signer(false, r.t2)},
		{"old and re-issued, one block", sumsOld, r.sigOld, []string{r.bothForms(t)}, r.signer(false, r.t2)},
		{"old block, then both forms in one block", sumsNew, r.sigNew, []string{r.old.Armored, r.bothForms(t)}, r.signer(false, r.t2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := signing.Verify(tt.doc, tt.sig, tt.keys)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !sameSigner(got, tt.want) {
				t.Errorf("Verify = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestVerifyReissuedKeyKeepsRevocation(t *testing.T) {
	t.Parallel()
	// A revocation in any form of a key revokes it: a newer self-signature
	// in another form does not undo it.
	r := newReissued(t)
	revoked := r.old.Reissue(t, time.Now().Add(-time.Hour), r.t2)
	if err := revoked.Entity.RevokeKey(packet.KeyCompromised, "test", nil); err != nil {
		t.Fatal(err)
	}
	revokedArmor := pgptest.Armor(t, openpgp.PublicKeyType, revoked.Entity.Serialize)
	for _, keys := range [][]string{{r.current.Armored, revokedArmor}, {revokedArmor, r.current.Armored}} {
		_, err := signing.Verify(sumsOld, r.sigOld, keys)
		if !errors.Is(err, pgperrors.ErrKeyRevoked) {
			t.Errorf("Verify with a revoked form among the keys: %v, want ErrKeyRevoked", err)
		}
	}
}

func TestVerifyRotatedKeys(t *testing.T) {
	t.Parallel()
	// A rotation: key A signed 1.0.0, key B signs 2.0.0; a registry lists
	// the key of each release, or both.
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	sigA, sigB := a.Sign(t, sumsOld), b.Sign(t, sumsNew)
	for _, tt := range []struct {
		name string
		doc  []byte
		sig  []byte
		keys []string
		want pgptest.Key
	}{
		{"1.0.0 lists A", sumsOld, sigA, []string{a.Armored}, a},
		{"2.0.0 lists B", sumsNew, sigB, []string{b.Armored}, b},
		{"1.0.0 lists B and A", sumsOld, sigA, []string{b.Armored, a.Armored}, a},
		{"2.0.0 lists A and B", sumsNew, sigB, []string{a.Armored, b.Armored}, b},
	} {
		got, err := signing.Verify(tt.doc, tt.sig, tt.keys)
		if err != nil || got.KeyID != tt.want.ID || got.Fingerprint != tt.want.Fingerprint || got.Expired {
			t.Errorf("%s: Verify = %+v, %v; want key %s, not expired", tt.name, got, err, tt.want.ID)
		}
	}
	if _, err := signing.Verify(sumsNew, sigB, []string{a.Armored}); !errors.Is(err, signing.ErrUnknownIssuer) {
		t.Errorf("2.0.0 with only A listed: %v, want ErrUnknownIssuer", err)
	}
}

func TestVerifyReportsExpiry(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	made := now.Add(-30 * 24 * time.Hour)
	expires := made.Add(24 * time.Hour)

	expired := pgptest.NewAt(t, "expired", made, expires)
	got, err := signing.Verify(sums, expired.SignAt(t, sums, made.Add(time.Hour)), []string{expired.Armored})
	if err != nil || !got.Expired || !got.Expires.Equal(expires) {
		t.Errorf("expired key: Verify = %+v, %v; want expired at %s", got, err, expires)
	}

	current := pgptest.NewAt(t, "current", made, now.Add(24*time.Hour))
	got, err = signing.Verify(sums, current.Sign(t, sums), []string{current.Armored})
	if err != nil || got.Expired || !got.Expires.Equal(now.Add(24*time.Hour)) {
		t.Errorf("current key: Verify = %+v, %v; want not expired, expiring at %s", got, err, now.Add(24*time.Hour))
	}

	forever := pgptest.New(t, "forever")
	got, err = signing.Verify(sums, forever.Sign(t, sums), []string{forever.Armored})
	if err != nil || got.Expired || !got.Expires.IsZero() {
		t.Errorf("key without expiry: Verify = %+v, %v; want no expiry", got, err)
	}

	// A signature that expires on its own: its expiry is reported.
	e := newEntity(t, keyConfig(made, 0))
	cfg := &packet.Config{Time: func() time.Time { return made.Add(time.Hour) }, SigLifetimeSecs: 60}
	got, err = signing.Verify(sums, sign(t, e, sums, cfg), []string{armored(t, e)})
	if want := made.Add(time.Hour + time.Minute); err != nil || !got.Expired || !got.Expires.Equal(want) {
		t.Errorf("expired signature: Verify = %+v, %v; want expired at %s", got, err, want)
	}
}

func TestCheckerReportsExpiry(t *testing.T) {
	t.Parallel()
	r := newReissued(t)
	got, err := signing.Checker{}.CheckSignature(sumsOld, r.sigOld, []string{r.old.Armored})
	if err != nil || !got.Expired || !got.Expires.Equal(r.t1) || got.KeyID != r.old.ID {
		t.Errorf("CheckSignature = %+v, %v; want %s expired at %s", got, err, r.old.ID, r.t1)
	}
}

func sameSigner(a, b signing.Signer) bool {
	return a.KeyID == b.KeyID && a.Fingerprint == b.Fingerprint && a.Expired == b.Expired && a.Expires.Equal(b.Expires)
}

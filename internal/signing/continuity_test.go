package signing_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/mirror"
)

// Key continuity, decided by mirror.TrustPolicy.Authenticate with real
// keys: a release's signer is compared with the signers of the releases a
// mirror holds (mirror.KeyHistory).

var sums3 = []byte("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff  terraform-provider-foo_3.0.0_linux_amd64.zip\n")

// heldBy is a history of 1.0.0 and 2.0.0 verified by k, as a build would
// have recorded them.
func heldBy(t *testing.T, k pgptest.Key) *mirror.KeyHistory {
	t.Helper()
	h := &mirror.KeyHistory{}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		s, err := signing.Checker{}.CheckSignature(sumsOld, k.Sign(t, sumsOld), []string{k.Armored})
		if err != nil {
			t.Fatal(err)
		}
		h.Releases = append(h.Releases, mirror.SignedRelease{Version: addrs.MustParseVersion(v), Signer: s})
	}
	return h
}

func authenticate3(t *testing.T, rule mirror.TrustRule, signer pgptest.Key, history *mirror.KeyHistory) (mirror.Verdict, error) {
	t.Helper()
	pkg := mirror.Package{Provider: addrs.MustParseProvider("hashicorp/foo"), Version: addrs.MustParseVersion("3.0.0"), Platform: addrs.MustParsePlatform("linux_amd64")}
	ev := mirror.Evidence{Sums: sums3, Signature: signer.Sign(t, sums3), Keys: []string{signer.Armored}, History: history}
	return mirror.TrustPolicy{Default: rule}.Authenticate(signing.Checker{}, pkg, ev)
}

func TestKeyChange(t *testing.T) {
	yes, no := true, false
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	held := heldBy(t, a)
	for _, tt := range []struct {
		name   string
		rule   mirror.TrustRule
		status mirror.KeyStatus
		warn   bool
		refuse bool
	}{
		{"default: warn", mirror.TrustRule{}, mirror.KeyChanged, true, false},
		{"warn", mirror.TrustRule{RefuseKeyChange: &no}, mirror.KeyChanged, true, false},
		{"refuse", mirror.TrustRule{RefuseKeyChange: &yes}, mirror.KeyRefused, false, true},
		{"accepted by key ID", mirror.TrustRule{RefuseKeyChange: &yes, AcceptNewKeys: []string{strings.ToLower(b.ID)}}, mirror.KeyAccepted, false, false},
		{"accepted by fingerprint", mirror.TrustRule{AcceptNewKeys: []string{b.Fingerprint}}, mirror.KeyAccepted, false, false},
		{"another key accepted", mirror.TrustRule{AcceptNewKeys: []string{a.ID}}, mirror.KeyChanged, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := authenticate3(t, tt.rule, b, held)
			var k *mirror.KeyContinuity
			if tt.refuse {
				var verr *mirror.VerificationError
				if !errors.As(err, &verr) || !errors.As(err, &k) || k.Status != tt.status {
					t.Fatalf("err = %v, want a VerificationError with a refused key change", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				k = v.Keys
			}
			if k == nil || k.Status != tt.status || k.Signer.Fingerprint != b.Fingerprint || k.Previous == nil ||
				k.Previous.Signer.Fingerprint != a.Fingerprint || k.Previous.Version.String() != "2.0.0" {
				t.Fatalf("continuity = %+v, want %s from A (2.0.0) to B", k, tt.status)
			}
			warned := len(v.Warnings) == 1 && strings.Contains(v.Warnings[0], a.Fingerprint) && strings.Contains(v.Warnings[0], b.Fingerprint)
			if warned != tt.warn || (!tt.warn && len(v.Warnings) != 0) {
				t.Errorf("warnings %q, want a warning naming both fingerprints: %v", v.Warnings, tt.warn)
			}
			if tt.refuse && (!strings.Contains(err.Error(), a.Fingerprint) || !strings.Contains(err.Error(), b.Fingerprint)) {
				t.Errorf("the refusal does not name both fingerprints: %v", err)
			}
		})
	}
}

func TestSameKeyInAnotherFormIsNoChange(t *testing.T) {
	yes := true
	now := time.Now().Truncate(time.Second)
	a := pgptest.NewAt(t, "A", now.Add(-48*time.Hour), now.Add(30*24*time.Hour))
	held := heldBy(t, a)
	for name, form := range map[string]pgptest.Key{
		"the same form":                 a,
		"re-issued with a later expiry": a.Reissue(t, now.Add(-time.Hour), now.Add(365*24*time.Hour)),
		"with a new signing subkey":     a.WithSigningSubkey(t, now.Add(-time.Hour)),
	} {
		t.Run(name, func(t *testing.T) {
			v, err := authenticate3(t, mirror.TrustRule{RefuseKeyChange: &yes}, form, held)
			if err != nil || v.Keys == nil || v.Keys.Status != mirror.KeySame || len(v.Warnings) != 0 {
				t.Fatalf("%+v, %v; want the same key, no warning", v, err)
			}
		})
	}
}

func TestFirstSignedRelease(t *testing.T) {
	yes := true
	a := pgptest.New(t, "A")
	for name, h := range map[string]*mirror.KeyHistory{
		"nothing held":                {},
		"only unsigned releases held": {Releases: []mirror.SignedRelease{{Version: addrs.MustParseVersion("1.0.0")}}},
	} {
		t.Run(name, func(t *testing.T) {
			v, err := authenticate3(t, mirror.TrustRule{RefuseKeyChange: &yes}, a, h)
			if err != nil || v.Keys == nil || v.Keys.Status != mirror.KeyFirst || len(v.Warnings) != 0 ||
				!strings.Contains(v.Keys.Describe(), "holds no signed release") {
				t.Fatalf("%+v, %v; want a first release, said so, with no warning", v, err)
			}
		})
	}
	if v, err := authenticate3(t, mirror.TrustRule{}, a, nil); err != nil || v.Keys != nil {
		t.Errorf("without a history: %+v, %v; want no comparison", v, err)
	}
}

func TestPlatformAddedToAReleaseOfAnotherKey(t *testing.T) {
	// The mirror holds 2.0.0 by B and 3.0.0 by A; a platform added to
	// 3.0.0 is signed by A, as the rest of 3.0.0: no change.
	yes := true
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	h := &mirror.KeyHistory{}
	for v, k := range map[string]pgptest.Key{"2.0.0": b, "3.0.0": a} {
		h.Releases = append(h.Releases, mirror.SignedRelease{Version: addrs.MustParseVersion(v), Signer: mirror.Signer{KeyID: k.ID, Fingerprint: k.Fingerprint}})
	}
	if v, err := authenticate3(t, mirror.TrustRule{RefuseKeyChange: &yes}, a, h); err != nil || v.Keys == nil || v.Keys.Status != mirror.KeySame {
		t.Errorf("%+v, %v; want the same key as the release's own", v, err)
	}
}

func TestSameKeyByIDInOldRecords(t *testing.T) {
	// A provenance record kept before fingerprints were names its key by
	// ID alone: the same key ID is the same key.
	a := pgptest.New(t, "A")
	old := &mirror.KeyHistory{Releases: []mirror.SignedRelease{{Version: addrs.MustParseVersion("2.0.0"), Signer: mirror.Signer{KeyID: a.ID}}}}
	if v, err := authenticate3(t, mirror.TrustRule{}, a, old); err != nil || v.Keys == nil || v.Keys.Status != mirror.KeySame {
		t.Errorf("%+v, %v; want the same key", v, err)
	}
}

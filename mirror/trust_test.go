package mirror

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

func keyID(name string) string { return strings.ToUpper(hex.EncodeToString([]byte(name))) }

func TestTrustPolicyResolution(t *testing.T) {
	yes, no := true, false
	policy := TrustPolicy{
		Default: TrustRule{RefuseUnsigned: &yes},
		Rules: []TrustRule{
			{Hostname: "registry.opentofu.org", Namespace: "acme", Type: "special", RefuseExpired: &yes},
			{Hostname: "registry.opentofu.org", Namespace: "acme", Type: "*", KeyIDs: []string{"A"}, RefuseUnsigned: &no},
		},
	}
	tests := map[string]Trust{
		"hashicorp/aws":                {RefuseUnsigned: true},
		"acme/other":                   {KeyIDs: []string{"A"}},
		"acme/special":                 {KeyIDs: []string{"A"}, RefuseExpired: true},
		"example.com/acme/special":     {RefuseUnsigned: true},
		"registry.opentofu.org/acme/x": {KeyIDs: []string{"A"}},
	}
	for addr, want := range tests {
		got := policy.For(addrs.MustParseProvider(addr))
		if strings.Join(got.KeyIDs, ",") != strings.Join(want.KeyIDs, ",") || got.RefuseExpired != want.RefuseExpired || got.RefuseUnsigned != want.RefuseUnsigned {
			t.Errorf("For(%s) = %+v, want %+v (the provider rule must win over the namespace rule, which wins over the default)", addr, got, want)
		}
	}
}

func TestBuildAppliesKeyAllowlistAndExpiry(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		signer  string
		rule    TrustRule
		wantErr string
	}{
		{"allowed key ID", "good", TrustRule{KeyIDs: []string{keyID("good")}}, ""},
		{"allowed by fingerprint, lower case", "good", TrustRule{KeyIDs: []string{strings.ToLower(strings.Repeat("0", 32) + keyID("good"))}}, ""},
		{"key outside the allowlist", "good", TrustRule{KeyIDs: []string{keyID("other")}}, "does not allow"},
		{"expired key, default policy", "expired", TrustRule{}, ""},
		{"expired key refused", "expired", TrustRule{RefuseExpired: &yes}, "has expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.src.add("hashicorp/foo", "1.0.0", "linux_amd64")
			for k, m := range h.src.metas {
				m.SigningKeys = []string{tt.signer}
				h.src.metas[k] = m
			}
			h.src.files["registry.opentofu.org/hashicorp/foo/1.0.0/SHA256SUMS.sig"] = []byte("signed-by:" + tt.signer)
			tt.rule.Hostname, tt.rule.Namespace, tt.rule.Type = "registry.opentofu.org", "hashicorp", "foo"
			r := h.build(t, Options{Trust: TrustPolicy{Rules: []TrustRule{tt.rule}}}, requirement(t, "hashicorp/foo", "1.0.0", "linux_amd64"))
			err := r.Err()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := r.Results[0].KeyID; got != keyID(tt.signer) {
					t.Errorf("report records key %q, want %q", got, keyID(tt.signer))
				}
				return
			}
			var verr *VerificationError
			if !errors.As(err, &verr) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want a VerificationError containing %q", err, tt.wantErr)
			}
			if h.exists(fooDir + "index.json") {
				t.Error("a release refused by the trust policy was published")
			}
		})
	}
}

// expiringChecker reports every signature as made by one key, expired or
// not, expiring at expires.
type expiringChecker struct {
	expired bool
	expires time.Time
}

func (c expiringChecker) CheckSignature([]byte, []byte, []string) (Signer, error) {
	return Signer{KeyID: "34365D9472D7468F", Fingerprint: strings.Repeat("0", 24) + "34365D9472D7468F", Expired: c.expired, Expires: c.expires}, nil
}

func TestAuthenticateNamesTheExpiry(t *testing.T) {
	yes := true
	pkg := Package{Provider: addrs.MustParseProvider("hashicorp/foo"), Version: addrs.MustParseVersion("1.0.0"), Platform: addrs.MustParsePlatform("linux_amd64")}
	ev := Evidence{Sums: []byte(strings.Repeat("0", 64) + "  terraform-provider-foo_1.0.0_linux_amd64.zip\n"), Signature: []byte("sig"), Keys: []string{"key"}}
	expired := expiringChecker{expired: true, expires: time.Date(2026, 4, 1, 12, 30, 0, 0, time.FixedZone("CEST", 2*3600))}
	const when = "expired on 2026-04-01 10:30:00 UTC"

	v, err := TrustPolicy{}.Authenticate(expired, pkg, ev)
	if err != nil || len(v.Warnings) != 1 || !strings.Contains(v.Warnings[0], "34365D9472D7468F") || !strings.Contains(v.Warnings[0], when) {
		t.Errorf("expired key, default policy: %+v, %v; want one warning naming the key and %q", v, err, when)
	}

	_, err = TrustPolicy{Default: TrustRule{RefuseExpired: &yes}}.Authenticate(expired, pkg, ev)
	var verr *VerificationError
	if !errors.As(err, &verr) || !strings.Contains(err.Error(), "34365D9472D7468F") || !strings.Contains(err.Error(), when) {
		t.Errorf("expired key refused: %v; want a VerificationError naming the key and %q", err, when)
	}

	// A key re-issued with a later expiry is not expired: neither warned
	// about nor refused, though it has an expiry.
	current := expiringChecker{expires: time.Now().Add(24 * time.Hour)}
	for _, tp := range []TrustPolicy{{}, {Default: TrustRule{RefuseExpired: &yes}}} {
		if v, err := tp.Authenticate(current, pkg, ev); err != nil || len(v.Warnings) != 0 {
			t.Errorf("key expiring tomorrow: %+v, %v; want accepted without warnings", v, err)
		}
	}
}

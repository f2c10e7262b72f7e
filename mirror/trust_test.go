package mirror

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

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

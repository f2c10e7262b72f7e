package mirror

import (
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// TrustPolicy says which signatures a build accepts. Rules apply from the
// most general to the most specific: the default, then a namespace rule,
// then a provider rule, each overriding only what it sets.
type TrustPolicy struct {
	Default TrustRule
	Rules   []TrustRule
}

// TrustRule is one level of the policy. Nil fields inherit.
type TrustRule struct {
	// Hostname and Namespace select the providers a rule applies to; Type
	// is a provider type or "*" for the whole namespace. Unset on Default.
	Hostname  addrs.Hostname
	Namespace string
	Type      string

	// KeyIDs lists the only keys allowed to sign, as 16-digit key IDs or
	// 40-digit fingerprints; nil allows any key the registry advertises.
	KeyIDs []string
	// RefuseExpired refuses signatures by expired keys.
	RefuseExpired *bool
	// RefuseUnsigned refuses packages that publish no signing keys, even
	// on registry.opentofu.org.
	RefuseUnsigned *bool
	// RefuseKeyChange refuses a release signed by another primary key than
	// the releases of the provider the mirror holds (a key change); a key
	// change is otherwise accepted with a warning.
	RefuseKeyChange *bool
	// AcceptNewKeys lists the new keys (16-digit key IDs or 40-digit
	// fingerprints) a key change may go to without a warning or a
	// refusal.
	AcceptNewKeys []string
}

// Trust is the policy in force for one provider.
type Trust struct {
	KeyIDs          []string
	RefuseExpired   bool
	RefuseUnsigned  bool
	RefuseKeyChange bool
	AcceptNewKeys   []string
}

// For resolves the policy for p.
func (tp TrustPolicy) For(p addrs.Provider) Trust {
	var t Trust
	t.apply(tp.Default)
	for _, wantType := range []bool{false, true} {
		for _, r := range tp.Rules {
			if r.Hostname == p.Hostname && r.Namespace == p.Namespace && (r.Type != "*") == wantType && (r.Type == "*" || r.Type == p.Type) {
				t.apply(r)
			}
		}
	}
	return t
}

func (t *Trust) apply(r TrustRule) {
	if r.KeyIDs != nil {
		t.KeyIDs = r.KeyIDs
	}
	if r.RefuseExpired != nil {
		t.RefuseExpired = *r.RefuseExpired
	}
	if r.RefuseUnsigned != nil {
		t.RefuseUnsigned = *r.RefuseUnsigned
	}
	if r.RefuseKeyChange != nil {
		t.RefuseKeyChange = *r.RefuseKeyChange
	}
	if r.AcceptNewKeys != nil {
		t.AcceptNewKeys = r.AcceptNewKeys
	}
}

// allows reports whether the policy accepts a signature by signer.
func (t Trust) allows(signer Signer) bool {
	return len(t.KeyIDs) == 0 || names(t.KeyIDs, signer)
}

// names reports whether a list of key IDs and fingerprints names signer.
func names(ids []string, signer Signer) bool {
	return slices.ContainsFunc(ids, func(id string) bool {
		id = strings.ToUpper(id)
		return id == signer.KeyID || id == signer.Fingerprint
	})
}

func joinIDs(ids []string) string { return strings.Join(ids, ", ") }

// ValidKeyID reports whether s is a 16-digit key ID or a 40-digit
// fingerprint in hexadecimal.
func ValidKeyID(s string) bool {
	if len(s) != 16 && len(s) != 40 {
		return false
	}
	for _, r := range strings.ToUpper(s) {
		if (r < '0' || r > '9') && (r < 'A' || r > 'F') {
			return false
		}
	}
	return true
}

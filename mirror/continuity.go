package mirror

import (
	"fmt"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// KeyHistory is what a mirror holds of one provider's signers: the key
// that verified each release it keeps (from their provenance records),
// the evidence a new release's signer is compared with.
type KeyHistory struct {
	Releases []SignedRelease
}

// SignedRelease is a release a mirror holds, with the key that verified it.
type SignedRelease struct {
	Version addrs.Version
	Signer  Signer
}

// KeyStatus is how a release's signer compares with a provider's history.
type KeyStatus string

// The outcomes of the comparison.
const (
	// KeyFirst: the mirror holds no signed release of the provider, so
	// there is nothing to compare with.
	KeyFirst KeyStatus = "first"
	// KeySame: a release the mirror holds was signed by the same primary
	// key (in whatever form: re-issued, or with another subkey).
	KeySame KeyStatus = "same"
	// KeyChanged: another primary key signed it; accepted with a warning.
	KeyChanged KeyStatus = "changed"
	// KeyAccepted: another primary key signed it, one the trust policy
	// names as accepted (accept_new_keys).
	KeyAccepted KeyStatus = "accepted"
	// KeyRefused: another primary key signed it, and the trust policy
	// refuses key changes.
	KeyRefused KeyStatus = "refused"
)

// KeyContinuity is the comparison of a release's signer with the signers
// of the provider's releases a mirror holds.
type KeyContinuity struct {
	Package Package // the release
	Status  KeyStatus
	Signer  Signer
	// Previous is, for a change, the newest release the mirror holds and
	// the key that signed it.
	Previous *SignedRelease
}

// Error says how the signer compares, without naming the release; a
// refused change is why a release fails.
func (k *KeyContinuity) Error() string {
	switch k.Status {
	case KeyFirst:
		return fmt.Sprintf("signed by %s; the mirror holds no signed release of %s to compare its key with", keyText(k.Signer), k.Package.Provider)
	case KeySame:
		return fmt.Sprintf("signed by %s, as releases the mirror holds", keyText(k.Signer))
	}
	return fmt.Sprintf("signed by another key than the releases the mirror holds: %s, where %s was signed by %s",
		keyText(k.Signer), k.Previous.Version, keyText(k.Previous.Signer))
}

// Describe says in words how the release's signer compares.
func (k *KeyContinuity) Describe() string {
	return k.Package.String() + ": " + k.Error()
}

// keyText names a key by its ID, fingerprint and times, as far as known.
func keyText(s Signer) string {
	out := "key " + s.KeyID
	var about []string
	if s.Fingerprint != "" {
		about = append(about, "fingerprint "+s.Fingerprint)
	}
	if !s.Created.IsZero() {
		about = append(about, "made "+s.Created.UTC().Format(time.DateOnly))
	}
	if !s.Expires.IsZero() {
		about = append(about, "expires "+s.Expires.UTC().Format(time.DateOnly))
	}
	for i, a := range about {
		out += map[bool]string{true: " (", false: ", "}[i == 0] + a
	}
	if len(about) > 0 {
		out += ")"
	}
	return out
}

// SameKey reports whether two signers are the same primary key: by
// fingerprint when both are known, else by key ID. A key re-issued with a
// new self-signature, or signing with a new subkey, is the same key.
func SameKey(a, b Signer) bool {
	return layout.KeptSigner{KeyID: a.KeyID, Fingerprint: a.Fingerprint}.SameKey(layout.KeptSigner{KeyID: b.KeyID, Fingerprint: b.Fingerprint})
}

// compare places signer against the history under trust. The release's
// own version counts too: a platform added to a release the mirror holds
// is signed by the key that signed the rest.
func (h KeyHistory) compare(trust Trust, pkg Package, signer Signer) *KeyContinuity {
	k := &KeyContinuity{Package: Package{Provider: pkg.Provider, Version: pkg.Version}, Status: KeyFirst, Signer: signer}
	for _, r := range h.Releases {
		if r.Signer.KeyID == "" {
			continue
		}
		if SameKey(r.Signer, signer) {
			k.Status, k.Previous = KeySame, nil
			return k
		}
		if k.Previous == nil || r.Version.GreaterThan(k.Previous.Version) {
			k.Status, k.Previous = KeyChanged, &r
		}
	}
	switch {
	case k.Status != KeyChanged:
	case names(trust.AcceptNewKeys, signer):
		k.Status = KeyAccepted
	case trust.RefuseKeyChange:
		k.Status = KeyRefused
	}
	return k
}

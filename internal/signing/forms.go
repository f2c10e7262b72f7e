package signing

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// forms holds every form of each key offered together, by primary key
// fingerprint, merged into one entity (merge). A key keeps its identity
// (its primary key material) when it is re-issued: only its
// self-signatures change, so every form of it is the same key.
type forms map[string]*openpgp.Entity

// readForms reads the forms of the keys in every armored block that
// parses; a block that does not is reported when Verify reaches it.
func readForms(armoredKeys []string) forms {
	byKey := map[string][]*openpgp.Entity{}
	var order []string
	for _, armored := range armoredKeys {
		ring, err := openpgp.ReadArmoredKeyRing(strings.NewReader(armored))
		if err != nil {
			continue
		}
		for _, e := range ring {
			fp := fingerprint(e)
			if _, seen := byKey[fp]; !seen {
				order = append(order, fp)
			}
			byKey[fp] = append(byKey[fp], e)
		}
	}
	f := make(forms, len(order))
	for _, fp := range order {
		f[fp] = merge(byKey[fp])
	}
	return f
}

// ring is ring with each key replaced by the merge of all its forms, each
// key once.
func (f forms) ring(ring openpgp.EntityList) openpgp.EntityList {
	out := make(openpgp.EntityList, 0, len(ring))
	seen := map[string]bool{}
	for _, e := range ring {
		fp := fingerprint(e)
		if seen[fp] {
			continue
		}
		seen[fp] = true
		if m, ok := f[fp]; ok {
			e = m
		}
		out = append(out, e)
	}
	return out
}

func fingerprint(e *openpgp.Entity) string {
	return strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}

// merge returns one entity that says what all forms of a key say, as
// OpenPGP implementations merge a key they import again: every
// revocation, each user ID with every signature over it and the newest of
// its self-signatures, each subkey with every revocation and its newest
// binding. The forms were read with go-crypto, which checked every
// self-signature, binding and revocation it keeps against the primary
// key, so no form can add what the key's holder did not sign. The forms
// are not changed.
func merge(forms []*openpgp.Entity) *openpgp.Entity {
	if len(forms) == 1 {
		return forms[0]
	}
	m := *forms[0]
	m.Identities = map[string]*openpgp.Identity{}
	m.Revocations, m.Signatures, m.Subkeys = nil, nil, nil
	for _, f := range forms {
		m.Revocations = append(m.Revocations, f.Revocations...)
		m.Signatures = append(m.Signatures, f.Signatures...)
		m.SelfSignature = newer(m.SelfSignature, f.SelfSignature)
		for name, id := range f.Identities {
			mergeIdentity(m.Identities, name, id)
		}
		for _, sk := range f.Subkeys {
			m.Subkeys = mergeSubkey(m.Subkeys, sk)
		}
	}
	return &m
}

func mergeIdentity(ids map[string]*openpgp.Identity, name string, id *openpgp.Identity) {
	have, ok := ids[name]
	if !ok {
		c := *id
		c.Signatures = append([]*packet.Signature(nil), id.Signatures...)
		c.Revocations = append([]*packet.Signature(nil), id.Revocations...)
		ids[name] = &c
		return
	}
	have.Signatures = append(have.Signatures, id.Signatures...)
	have.Revocations = append(have.Revocations, id.Revocations...)
	have.SelfSignature = newer(have.SelfSignature, id.SelfSignature)
}

func mergeSubkey(subkeys []openpgp.Subkey, sk openpgp.Subkey) []openpgp.Subkey {
	for i := range subkeys {
		if string(subkeys[i].PublicKey.Fingerprint) == string(sk.PublicKey.Fingerprint) {
			subkeys[i].Revocations = append(subkeys[i].Revocations, sk.Revocations...)
			subkeys[i].Sig = newer(subkeys[i].Sig, sk.Sig)
			return subkeys
		}
	}
	sk.Revocations = append([]*packet.Signature(nil), sk.Revocations...)
	return append(subkeys, sk)
}

// newer is the later-made of two signatures, as go-crypto picks a
// self-signature when a key holds several.
func newer(a, b *packet.Signature) *packet.Signature {
	if a == nil || (b != nil && b.CreationTime.After(a.CreationTime)) {
		return b
	}
	return a
}

// expiry is when a signature by e stops being current: the earliest of
// the key's expiry as its newest self-signature says, that
// self-signature's own, the signing subkey's and the signature's own;
// zero if none of them expires.
func expiry(e *openpgp.Entity, sig *packet.Signature) time.Time {
	var out time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	self, _ := e.PrimarySelfSignature()
	if self != nil {
		earliest(keyExpiry(e.PrimaryKey, self))
		earliest(sigExpiry(self))
	}
	if sig.IssuerKeyId != nil && *sig.IssuerKeyId != e.PrimaryKey.KeyId {
		for _, sk := range e.Subkeys {
			if sk.PublicKey.KeyId == *sig.IssuerKeyId && sk.Sig != nil {
				earliest(keyExpiry(sk.PublicKey, sk.Sig))
				earliest(sigExpiry(sk.Sig))
			}
		}
	}
	earliest(sigExpiry(sig))
	if out.IsZero() {
		return out
	}
	return out.UTC()
}

// keyExpiry is when key expires according to its self-signature or
// binding sig; zero if never.
func keyExpiry(key *packet.PublicKey, sig *packet.Signature) time.Time {
	if sig.KeyLifetimeSecs == nil || *sig.KeyLifetimeSecs == 0 {
		return time.Time{}
	}
	return key.CreationTime.Add(time.Duration(*sig.KeyLifetimeSecs) * time.Second)
}

// sigExpiry is when a signature expires; zero if never.
func sigExpiry(sig *packet.Signature) time.Time {
	if sig.SigLifetimeSecs == nil || *sig.SigLifetimeSecs == 0 {
		return time.Time{}
	}
	return sig.CreationTime.Add(time.Duration(*sig.SigLifetimeSecs) * time.Second)
}

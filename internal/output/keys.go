package output

import (
	"time"

	"github.com/tfmirror/tfmirror/mirror"
)

// keyJSON names a signing key in a "signing_key" event.
type keyJSON struct {
	KeyID       string `json:"key_id"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Created     string `json:"created,omitempty"`
	Expires     string `json:"expires,omitempty"`
}

func keyOf(s mirror.Signer) keyJSON {
	k := keyJSON{KeyID: s.KeyID, Fingerprint: s.Fingerprint}
	if !s.Created.IsZero() {
		k.Created = s.Created.UTC().Format(time.RFC3339)
	}
	if !s.Expires.IsZero() {
		k.Expires = s.Expires.UTC().Format(time.RFC3339)
	}
	return k
}

// keysEvent is a "signing_key" event: how a release's signer compares
// with the signers of the provider's releases the mirror holds.
type keysEvent struct {
	Provider string  `json:"provider"`
	Version  string  `json:"version"`
	Status   string  `json:"status"`
	Key      keyJSON `json:"key"`
	// Previous is, for a change, the newest release the mirror holds and
	// its key.
	Previous *previousJSON `json:"previous,omitempty"`
	Message  string        `json:"message"`
}

type previousJSON struct {
	Version string  `json:"version"`
	Key     keyJSON `json:"key"`
}

// keys reports a key comparison: an event with --json; for people, a
// line for a change to a key the policy accepts and, with --verbose, for
// a first release (a change is a warning, a refusal the release's
// failure, each said once).
func (p *Printer) keys(k *mirror.KeyContinuity) {
	msg := k.Describe()
	if p.opts.JSON {
		ev := keysEvent{Provider: k.Package.Provider.String(), Version: k.Package.Version.String(), Status: string(k.Status), Key: keyOf(k.Signer), Message: msg}
		if k.Previous != nil {
			ev.Previous = &previousJSON{Version: k.Previous.Version.String(), Key: keyOf(k.Previous.Signer)}
		}
		p.emit("signing_key", ev)
		return
	}
	switch k.Status {
	case mirror.KeyAccepted:
		p.Line("key change " + msg + "; the trust policy accepts the new key")
	case mirror.KeyFirst:
		if p.opts.Verbose && !p.opts.Quiet {
			p.say(msg)
		}
	}
}

// deprecationEvent is a "deprecation" event: what a provider's version
// list warns of it.
type deprecationEvent struct {
	Provider string   `json:"provider"`
	Warnings []string `json:"warnings"`
	Message  string   `json:"message"`
}

// deprecation reports a provider's warnings: an event with --json, a
// warning line for people (even with --quiet: clients will print it too).
func (p *Printer) deprecation(d mirror.Deprecation) {
	if p.opts.JSON {
		p.emit("deprecation", deprecationEvent{Provider: d.Provider.String(), Warnings: d.Warnings, Message: d.Describe()})
		return
	}
	p.say("warning: " + d.Describe())
}

package mirror

import (
	"context"
	"sync"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// signerLister is a destination that keeps provenance records (a mirror
// tree: layout.TreeDestination; an OCI registry, whose provenance
// artifacts keep them), so it can say which keys signed the releases of
// a provider it holds.
type signerLister interface {
	Signers(ctx context.Context, p addrs.Provider) ([]layout.KeptSigner, error)
}

var _ signerLister = layout.TreeDestination{}

// histories reads each provider's key history once per build, when a
// release of it is first authenticated.
type histories struct {
	mu sync.Mutex
	by map[string]*historyOnce
}

type historyOnce struct {
	once sync.Once
	h    *KeyHistory
}

// history is what the destinations hold of p's signers: the releases of
// every destination that keeps provenance records, as they were before
// this build published anything of p. Nil when no destination can say,
// or one fails to (a warning says so): the release's key is then not
// compared.
func (b *Builder) history(ctx context.Context, p addrs.Provider) *KeyHistory {
	b.histories.mu.Lock()
	if b.histories.by == nil {
		b.histories.by = map[string]*historyOnce{}
	}
	o, ok := b.histories.by[p.String()]
	if !ok {
		o = &historyOnce{}
		b.histories.by[p.String()] = o
	}
	b.histories.mu.Unlock()
	o.once.Do(func() { o.h = b.readHistory(ctx, p) })
	return o.h
}

func (b *Builder) readHistory(ctx context.Context, p addrs.Provider) *KeyHistory {
	var h *KeyHistory
	for _, d := range b.Dests {
		l, ok := d.(signerLister)
		if !ok {
			continue
		}
		signers, err := l.Signers(ctx, p)
		if err != nil {
			b.warn("%s: the signing keys of the releases %s holds cannot be read, so a new release's key is not compared with them: %v", p, d.Location(), err)
			return nil
		}
		if h == nil {
			h = &KeyHistory{}
		}
		for _, s := range signers {
			h.Releases = append(h.Releases, SignedRelease{Version: s.Version, Signer: Signer{
				KeyID: s.KeyID, Fingerprint: s.Fingerprint, Created: s.Created, Expires: s.Expires,
			}})
		}
	}
	return h
}

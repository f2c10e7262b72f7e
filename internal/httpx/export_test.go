package httpx

import (
	"context"
	"net/netip"
	"time"
)

// SetSleep replaces how f waits before a retry.
func SetSleep(f *Fetcher, sleep func(ctx context.Context, d time.Duration) error) {
	f.sleep = sleep
}

// SetLookup replaces how the location rule resolves host names until the
// test ends.
func SetLookup(t interface{ Cleanup(func()) }, lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)) {
	prev := lookupNetIP
	lookupNetIP = lookup
	t.Cleanup(func() { lookupNetIP = prev })
}

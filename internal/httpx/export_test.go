package httpx

import (
	"context"
	"time"
)

// SetSleep replaces how f waits before a retry.
func SetSleep(f *Fetcher, sleep func(ctx context.Context, d time.Duration) error) {
	f.sleep = sleep
}

// Backoff exposes Policy.backoff.
func Backoff(p Policy, retry int) time.Duration { return p.backoff(retry) }

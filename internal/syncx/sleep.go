package syncx

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends, whichever comes first. It returns
// nil once d has passed and ctx.Err() if ctx ended first. A d of zero or
// less does not wait: it returns ctx.Err() at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

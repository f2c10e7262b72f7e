package syncx

import (
	"context"
	"time"
)

// Grace returns a context that outlives ctx's cancellation by grace: work
// that must finish what it started (a publication after Ctrl-C) goes on,
// but not forever, against a destination that no longer answers. Its
// values are ctx's; cancel releases it at once.
func Grace(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		timer := time.AfterFunc(grace, func() { cancel(context.Cause(ctx)) })
		context.AfterFunc(out, func() { timer.Stop() })
	})
	return out, func() {
		stop()
		cancel(context.Canceled)
	}
}

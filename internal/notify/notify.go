// Package notify carries, in a context, who wants to hear of what a
// command waits for while it runs: a request retried, a lock another
// writer holds. Library code that retries or waits says so here; the
// command line installs a Handler that shows it (a line on a terminal, an
// event in --json). Without a Handler nothing happens. It owns that seam
// and nothing else, as net/http/httptrace does for requests.
package notify

import (
	"context"
	"time"
)

// Handler hears of waits. Calls may come from several goroutines.
type Handler interface {
	// Retry: a request to url failed with err and is tried again after
	// delay, for the attempt-th time (2 for the first retry).
	Retry(url string, attempt int, delay time.Duration, err error)
	// Wait: what (a lock) is held by holder ("" when unknown), and the
	// command waits for it, at most upTo.
	Wait(what, holder string, upTo time.Duration)
}

type key struct{}

// With returns ctx carrying h.
func With(ctx context.Context, h Handler) context.Context {
	return context.WithValue(ctx, key{}, h)
}

func handler(ctx context.Context) Handler {
	h, _ := ctx.Value(key{}).(Handler)
	return h
}

// Retry tells ctx's Handler that a request is retried.
func Retry(ctx context.Context, url string, attempt int, delay time.Duration, err error) {
	if h := handler(ctx); h != nil {
		h.Retry(url, attempt, delay, err)
	}
}

// Wait tells ctx's Handler that the command waits for what.
func Wait(ctx context.Context, what, holder string, upTo time.Duration) {
	if h := handler(ctx); h != nil {
		h.Wait(what, holder, upTo)
	}
}

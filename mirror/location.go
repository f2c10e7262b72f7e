package mirror

import (
	"context"
	"errors"
	"io"
)

// Location is where a document of a package is: its archive, the
// release's SHA256SUMS or its signature. A Source's PackageMeta gives
// them, as values that fetch the document themselves: a registry's fetch
// an HTTP URL (the adapter in internal/registry), a mirror's read a file
// the mirror holds (MirrorSource, HashedSource).
type Location interface {
	// Fetch copies the document to sink. A location that retries a failed
	// transfer calls sink.Reset first, so nothing of a broken attempt is
	// ever kept, let alone hashed. A body longer than the location allows,
	// or than a sink with a Limit() int64 method takes, is refused with an
	// error wrapping ErrTooLarge, and nothing past the limit is written.
	// Its errors name the document as it may be shown, so callers do not
	// name it themselves.
	Fetch(ctx context.Context, sink Sink) error
	// String names the document as it may be shown: never a secret (no
	// credentials, no signatures of presigned URLs). Two locations with
	// the same String name the same document.
	String() string
}

// Sizer is a Location that can tell its document's size without fetching
// it, for dry runs.
type Sizer interface {
	Size(ctx context.Context) (int64, error)
}

// Transport is a Location fetched over a network, which may carry it in
// plain text (http): the build warns about those.
type Transport interface {
	// Insecure reports whether the document travels in plain text.
	Insecure() bool
	// Origin is where it travels from, as it may be shown: the scheme and
	// host alone ("http://host"), never a path or a query.
	Origin() string
}

// Sink receives a download.
type Sink interface {
	io.Writer
	// Reset discards everything written so far.
	Reset() error
}

// ErrTooLarge means a download was longer than allowed: than the size the
// origin announced for it, or than the source's maximum. What arrived of
// it is worthless and is not kept for a later run.
var ErrTooLarge = errors.New("download is larger than allowed")

// locationFunc is a Location made of its display form and a function: a
// document a MirrorSource or HashedSource reads from its upstream.
type locationFunc struct {
	name  string
	fetch func(ctx context.Context, sink Sink) error
}

func (l locationFunc) Fetch(ctx context.Context, sink Sink) error { return l.fetch(ctx, sink) }

func (l locationFunc) String() string { return l.name }

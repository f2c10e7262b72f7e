package s3store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmw "github.com/aws/aws-sdk-go-v2/aws/middleware"
	smithymw "github.com/aws/smithy-go/middleware"

	"github.com/tfmirror/tfmirror/internal/chunkio"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// Bounds of what one read from the store may bring, chosen so that no
// real bucket comes near them while no hostile or broken endpoint can
// keep a command listing, or fill its memory, without end:
//
//   - DefaultMaxListObjects (1,000,000 objects in one listing): a mirror
//     of 200 providers, 100 versions each, for 10 platforms is 200,000
//     archives and about as many documents; the keys of a million
//     objects take about 100 MB.
//   - DefaultMaxListPages (10,000 pages of one listing): S3 answers up to
//     1,000 keys a page, so a real listing of a million objects is 1,000
//     pages (10,000 even for a store that pages by 100); a listing that
//     goes on with empty or one-key pages is stopped after 10,000
//     requests.
//   - DefaultMaxListPageBytes (16 MiB for the answer to one listing
//     request): a page of 1,000 keys of the longest kind S3 allows
//     (1,024 bytes) with their metadata is under 2 MiB.
//   - maxAnswerBytes (1 MiB) for the answer to any other request but a
//     GetObject's content (which every reader bounds itself): errors and
//     the answers of writes are a few hundred bytes.
const (
	DefaultMaxListObjects   = 1_000_000
	DefaultMaxListPages     = 10_000
	DefaultMaxListPageBytes = 16 << 20
	maxAnswerBytes          = 1 << 20
)

// ErrListTooLong means a listing went on past the store's bounds on
// pages or objects (Config.MaxListPages, Config.MaxListObjects): it is
// refused, not read to its end.
var ErrListTooLong = errors.New("the listing goes on past tfmirror's bound")

// ErrAnswerTooLarge means an answer's body was longer than the store
// reads of such an answer.
var ErrAnswerTooLarge = errors.New("the store's answer is larger than tfmirror reads")

// listBound counts the pages and entries of one listing.
type listBound struct {
	s     *Store
	what  string // "list s3://BUCKET/PREFIX"
	pages int
	items int
}

// next is called before each page is asked for.
func (b *listBound) next() error {
	if b.pages >= b.s.maxListPages {
		return fmt.Errorf("%s: %w: more than %d pages (%d entries so far); the manifest's settings max_list_pages raises the bound",
			b.what, ErrListTooLong, b.s.maxListPages, b.items)
	}
	b.pages++
	return nil
}

// add counts the entries of a page.
func (b *listBound) add(n int) error {
	b.items += n
	if b.items > b.s.maxListObjects {
		return fmt.Errorf("%s: %w: more than %d objects (after %d pages); the manifest's settings max_bucket_objects raises the bound",
			b.what, ErrListTooLong, b.s.maxListObjects, b.pages)
	}
	return nil
}

// boundedClient sends the store's requests with next and bounds every
// answer: its time as for downloads (connect and header timeouts are the
// transport's; httpx.Watch adds the stall and speed limits on the body),
// and its size, but for the content of a GetObject, which every reader of
// the store bounds itself: a listing page to maxPage bytes, any other
// answer (errors included, which the SDK reads whole) to maxAnswerBytes.
type boundedClient struct {
	next    aws.HTTPClient
	net     httpx.Policy
	maxPage int64
}

func (c boundedClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := httpx.Watch(req, c.net, c.next.Do)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	op := awsmw.GetOperationName(req.Context())
	limit := int64(maxAnswerBytes)
	switch {
	case op == "GetObject" && resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp, nil
	case listing[op] && resp.StatusCode >= 200 && resp.StatusCode < 300:
		limit = c.maxPage
	}
	resp.Body = &cappedBody{r: chunkio.LimitReader(resp.Body, limit), rc: resp.Body, limit: limit, op: op}
	return resp, nil
}

// listing are the operations whose answers are listing pages.
var listing = map[string]bool{
	"ListObjectsV2": true, "ListObjects": true, "ListObjectVersions": true,
	"ListMultipartUploads": true, "ListParts": true,
}

// cappedBody fails a read past its limit, instead of delivering more.
type cappedBody struct {
	r     io.Reader // chunkio.LimitReader of rc
	rc    io.ReadCloser
	limit int64
	op    string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, chunkio.ErrPastLimit) {
		return n, fmt.Errorf("%w: the answer to %s is longer than %d bytes", ErrAnswerTooLarge, b.op, b.limit)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// orDefault is v, or def when v is 0 or less.
func orDefault[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// excerptErrors makes the message of every failed request's error quote
// what the store answered (its error code and message, an XML decoder's
// complaint about the answer) bounded and with control characters
// escaped (excerpt.Error); the error itself stays in the chain, so its
// code and status are still found. Added outermost, around the retries.
func excerptErrors(stack *smithymw.Stack) error {
	return stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("ExcerptErrors",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			return out, md, excerpt.Error(err)
		}), smithymw.Before)
}

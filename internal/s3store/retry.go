package s3store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithymw "github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/syncx"
)

// The SDK decides what may be retried (throttling and 5xx answers,
// connection errors, its error codes); the run's policy decides how often
// and how long to wait, as it does for every other request, and each retry
// is told to the context's notify.Handler like theirs. The SDK's retry
// loop asks the retryer for a retry token just before it waits, with the
// request's context: retryer.GetRetryToken waits there, by the policy,
// and the SDK's own delay is zero.

// newRetryer returns the retryer of a store whose requests follow policy:
// at most policy.Retries retries, no client-side retry quota (a long
// build must not run out of retries because of an earlier burst) and no
// retry of a refused request. A write that a store keeping objects as
// files refuses because another client's delete removed the directory it
// was creating (409 ExistingObjectIsDirectory, versitygw's posix backend:
// builds sharing a prefix each delete their probe object) is tried again:
// it wrote nothing, and the next try finds the directory made anew.
func newRetryer(policy httpx.Policy) func() aws.Retryer {
	return func() aws.Retryer {
		standard := retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = max(policy.Retries, 0) + 1
			o.RateLimiter = ratelimit.None
			o.Retryables = append([]retry.IsErrorRetryable{refusedNotRetried{},
				retry.RetryableErrorCode{Codes: map[string]struct{}{"ExistingObjectIsDirectory": {}}}}, o.Retryables...)
		})
		return retryer{RetryerV2: standard, policy: policy}
	}
}

// retryer waits before each retry by the policy (or the server's
// Retry-After, up to httpx.MaxRetryAfter) and tells it.
type retryer struct {
	aws.RetryerV2
	policy httpx.Policy
}

func (r retryer) GetRetryToken(ctx context.Context, opErr error) (func(error) error, error) {
	release, err := r.RetryerV2.GetRetryToken(ctx, opErr)
	if err != nil {
		return nil, err
	}
	attempt, where := attemptOf(ctx)
	wait := r.policy.Backoff(attempt)
	if d, ok := retryAfter(opErr); ok {
		if d > httpx.MaxRetryAfter {
			return nil, fmt.Errorf("the server asks to wait %s before retrying, longer than the %s tfmirror waits", d, httpx.MaxRetryAfter)
		}
		wait = d
	}
	notify.Retry(ctx, where, attempt+1, wait, opErr)
	if err := syncx.Sleep(ctx, wait); err != nil {
		return nil, err
	}
	return release, nil
}

// RetryDelay is zero: GetRetryToken has waited.
func (retryer) RetryDelay(int, error) (time.Duration, error) { return 0, nil }

// retryAfter is the Retry-After of the answer err carries, if any.
func retryAfter(err error) (time.Duration, bool) {
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.Response == nil || re.Response.Response == nil {
		return 0, false
	}
	return httpx.RetryAfter(re.Response.Header, time.Now())
}

// attempts is what the retryer knows of one operation: how many attempts
// were sent, and to which URL (redacted) the last one went.
type attempts struct {
	mu  sync.Mutex
	n   int
	url string
}

type attemptsKey struct{}

// attemptOf returns the attempts of ctx's operation so far and the URL of
// the last one ("" outside an operation with countAttempts).
func attemptOf(ctx context.Context) (int, string) {
	a, ok := ctx.Value(attemptsKey{}).(*attempts)
	if !ok {
		return 1, ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return max(a.n, 1), a.url
}

// countAttempts adds to a client's stack what attemptOf reads: a record
// per operation, outside the retry loop, and a count of each attempt once
// its URL is known, at the end of the finalize step.
func countAttempts(stack *smithymw.Stack) error {
	err := stack.Initialize.Add(smithymw.InitializeMiddlewareFunc("CountAttemptsRecord",
		func(ctx context.Context, in smithymw.InitializeInput, next smithymw.InitializeHandler) (smithymw.InitializeOutput, smithymw.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, attemptsKey{}, &attempts{}), in)
		}), smithymw.Before)
	if err != nil {
		return err
	}
	return stack.Finalize.Add(smithymw.FinalizeMiddlewareFunc("CountAttempts",
		func(ctx context.Context, in smithymw.FinalizeInput, next smithymw.FinalizeHandler) (smithymw.FinalizeOutput, smithymw.Metadata, error) {
			if a, ok := ctx.Value(attemptsKey{}).(*attempts); ok {
				a.mu.Lock()
				a.n++
				if req, ok := in.Request.(*smithyhttp.Request); ok && req.URL != nil {
					a.url = redactedURL(req.URL)
				}
				a.mu.Unlock()
			}
			return next.HandleFinalize(ctx, in)
		}), smithymw.After)
}

// redactedURL is u without its query (an upload's id, a listing's
// token) and as httpx redacts any URL.
func redactedURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery = "", false
	return httpx.Redact(&c)
}

// refusedNotRetried makes a 401 or 403 answer and an untrusted server
// certificate final: retrying wrong credentials, a missing permission or
// a certificate only delays the error. The one
// exception is the SDK's clock skew correction, which marks its error as
// retryable itself and is left to decide.
type refusedNotRetried struct{}

func (refusedNotRetried) IsErrorRetryable(err error) aws.Ternary {
	var marked interface{ RetryableError() bool }
	if errors.As(err, &marked) {
		return aws.UnknownTernary
	}
	// An untrusted certificate stays untrusted.
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return aws.FalseTernary
	}
	switch statusCode(err) {
	case http.StatusUnauthorized, http.StatusForbidden:
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/layout"
)

// The publish protocol (PutIf, the lock and the writer leases) is only as
// safe as the store's conditional writes: a store that accepts If-Match
// and If-None-Match but does not enforce them lets two builds overwrite
// each other's index.json, both exiting 0. So before its first write into
// a bucket (the lock of prune, the lease of a publisher: never for a run
// that writes nothing) a Store confirms, once per process, endpoint and
// bucket, that the store refuses the conditional writes that must fail.
// It creates a probe object of its own under the private directory
// (PREFIX/.tfmirror/probe/ID, with If-None-Match: *), then writes it
// again with If-None-Match: * and with If-Match on an ETag it cannot
// have: each must be refused with 412 Precondition Failed (or 409, S3's
// ConditionalRequestConflict). The probe object is deleted after.
//
// A store that takes either write is refused for writing, with an error
// wrapping ErrConditionsIgnored that names the bucket and the condition
// it ignored, before anything of the mirror is written; it is the user's
// to fix (exit 2): such a store cannot hold a mirror tfmirror publishes
// into. There is no fallback to a "single writer" mode: the lock that
// would keep other writers out is itself a conditional write, so without
// the store's guarantee tfmirror could not know it is the single writer.
// A store that refuses the conditions with another error (501 Not
// Implemented, 400) is refused the same way. Errors that say nothing
// about the store's guarantee (a network error, throttling, a refused
// permission) fail the write likewise; only a store seen to enforce the
// conditions is remembered.

// ErrConditionsIgnored means the store does not enforce the conditional
// writes the publish protocol relies on.
var ErrConditionsIgnored = errors.New("the store does not enforce conditional writes (If-None-Match, If-Match), which concurrent publication relies on; use a store that does (Amazon S3, MinIO, Ceph RGW, Cloudflare R2, versitygw)")

const probeDir = layout.PrivateDirName + "/probe/"

// probeTimeout bounds deleting the probe object, whatever became of the
// write's context.
const probeTimeout = 30 * time.Second

// probes remembers each endpoint and bucket this process saw enforce the
// conditions. A store seen not to is probed again by the next Store that
// writes (a publisher keeps its error for its own later writes).
var probes struct {
	mu      sync.Mutex
	verdict map[string]*probeVerdict
}

// probeVerdict serializes the probes of one endpoint and bucket, so that
// concurrent first writes probe once.
type probeVerdict struct {
	mu   sync.Mutex
	done bool // the store enforces the conditions
}

// checkConditions makes sure the store enforces conditional writes,
// probing it the first time this process writes into the bucket.
func (s *Store) checkConditions(ctx context.Context) error {
	key := s.where() + "\x00" + s.bucket
	probes.mu.Lock()
	if probes.verdict == nil {
		probes.verdict = map[string]*probeVerdict{}
	}
	v := probes.verdict[key]
	if v == nil {
		v = &probeVerdict{}
		probes.verdict[key] = v
	}
	probes.mu.Unlock()

	v.mu.Lock()
	defer v.mu.Unlock()
	if v.done {
		return nil
	}
	err := s.probeConditions(ctx)
	v.done = err == nil
	return err
}

// probeConditions writes the probe object and the two writes that must be
// refused, and deletes it.
func (s *Store) probeConditions(ctx context.Context) error {
	key := s.prefix + probeDir + randomID()
	body := []byte("tfmirror checks that this store enforces conditional writes; this object is deleted right after\n")
	put := func(ifNoneMatch, ifMatch *string) (string, error) {
		out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
			Bucket:        aws.String(s.bucket),
			Key:           aws.String(key),
			Body:          bytes.NewReader(body),
			ContentLength: aws.Int64(int64(len(body))),
			ContentType:   aws.String("text/plain; charset=utf-8"),
			CacheControl:  aws.String("no-store"),
			IfNoneMatch:   ifNoneMatch,
			IfMatch:       ifMatch,
		})
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	ignored := func(what string, err error) error {
		if err != nil {
			err = fmt.Errorf("%w (it answered: %w)", ErrConditionsIgnored, err)
		} else {
			err = ErrConditionsIgnored
		}
		return inputerr.Wrap(fmt.Errorf("write to %s: bucket %s at %s %s (probe object %s): %w",
			s.Location(), s.bucket, s.where(), what, s.url(key), err))
	}

	etag, err := put(aws.String("*"), nil)
	switch {
	case err == nil:
	case unsupportedCondition(err):
		return ignored("does not support a write with If-None-Match: *", err)
	default:
		return fmt.Errorf("write to %s: check that the store enforces conditional writes: %w", s.Location(), s.fail(key, err))
	}
	defer s.deleteProbe(key)

	checks := []struct {
		what                 string
		ifNoneMatch, ifMatch *string
	}{
		{"accepted a write with If-None-Match: * over an object that exists, which must be refused", aws.String("*"), nil},
		{"accepted a write with If-Match on an ETag the object does not have, which must be refused", nil, aws.String(wrongETag(etag))},
	}
	for _, c := range checks {
		_, err := put(c.ifNoneMatch, c.ifMatch)
		switch {
		case err == nil:
			return ignored(c.what, nil)
		case isPreconditionFailed(err):
		case unsupportedCondition(err):
			return ignored("does not support conditional writes", err)
		default:
			return fmt.Errorf("write to %s: check that the store enforces conditional writes: %w", s.Location(), s.fail(key, err))
		}
	}
	return nil
}

// unsupportedCondition reports whether the store refused a conditional
// write as a request it does not support (rather than failing it for
// another reason).
func unsupportedCondition(err error) bool {
	switch errorCode(err) {
	case "NotImplemented", "InvalidArgument", "InvalidRequest":
		return true
	}
	s := statusCode(err)
	return s == http.StatusNotImplemented
}

// wrongETag is an ETag that is not etag.
func wrongETag(etag string) string {
	const a, b = `"00000000000000000000000000000000"`, `"11111111111111111111111111111111"`
	if etag == a {
		return b
	}
	return a
}

// deleteProbe removes the probe object; one left behind (the process was
// killed) is harmless: nothing lists it, and a prune's lock does not
// look at it.
func (s *Store) deleteProbe(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	_, _ = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
}

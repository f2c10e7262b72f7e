package s3store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/layout"
)

// The write lock is the object PREFIX/.tfmirror/lock, created with a
// conditional write (If-None-Match: *) so that of two writers exactly one
// succeeds. Its body says who holds it (pid, host, since when).
//
// S3 has no process that would release a lock when its holder dies, so
// the lock is a lease: while held, the Store rewrites the object every
// quarter of the lease (conditional on its ETag, If-Match), and a lock
// object whose last write (its Last-Modified, compared with the store's
// own clock, the Date of the answer) is older than the lease belongs to a
// writer that died: another writer may take it over, again with a write
// conditional on the ETag it saw, so that of two writers taking over at
// once exactly one succeeds. A holder that finds its lock taken over (its
// refresh refused) or that could not refresh it for a whole lease stops
// writing: Put and Delete fail with ErrLocked. Unlock deletes the object,
// conditional on its ETag, so it never removes a lock another writer took
// over.
//
// The lock relies on the store honouring If-None-Match and If-Match on
// PutObject (Amazon S3 since 2024, MinIO, versitygw, Ceph RGW, Cloudflare
// R2); a store that ignores them cannot exclude two writers.
const lockKey = layout.PrivateDirName + "/lock"

const (
	// lockPoll is how often a waiting Lock looks at the lock again.
	lockPoll = 500 * time.Millisecond
	// maxLockBytes bounds what is read of a lock object.
	maxLockBytes = 4096
	// unlockTimeout bounds releasing the lock, whatever the context of
	// Lock became.
	unlockTimeout = time.Minute
)

// lockInfo is the body of the lock object.
type lockInfo struct {
	ID        string `json:"id"` // random, so that every write has its own ETag
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	Since     string `json:"since"`
	Refreshed string `json:"refreshed"`
	// Lease is the holder's lease (a Go duration): a lock is respected for
	// the longer of it and the reader's own, so that a writer configured
	// with a short lease never takes over the lock of one that refreshes
	// it less often.
	Lease string `json:"lease"`
}

// staleAfter is how long the lock of info may go unrefreshed before a
// writer whose own lease is lease takes it over.
func (i lockInfo) staleAfter(lease time.Duration) time.Duration {
	if d, err := time.ParseDuration(i.Lease); err == nil && d > lease {
		return d
	}
	return lease
}

func (i lockInfo) String() string {
	if i.PID == 0 && i.Host == "" {
		return "an unknown writer"
	}
	return fmt.Sprintf("pid %d on %s since %s", i.PID, i.Host, i.Since)
}

// heldLock is the lock while this Store holds it; guarded by Store.mu.
type heldLock struct {
	etag      string
	info      lockInfo
	refreshed time.Time // local clock of the last successful write
	lost      error     // set when the lock was taken over
	stop      chan struct{}
	done      chan struct{}
}

// Lock takes the store's write lock, waiting up to wait (polling) while
// another writer holds it, then aborts the multipart uploads interrupted
// writers left. A lock whose holder stopped refreshing it for longer than
// the lease (Config.LockLease) is taken over. When the lock stays held
// the error wraps layout.ErrLocked and says by whom.
func (s *Store) Lock(ctx context.Context, wait time.Duration) (func() error, error) {
	s.mu.Lock()
	if s.held != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("lock %s: this store already holds it: %w", s.Location(), layout.ErrLocked)
	}
	s.mu.Unlock()

	key := s.prefix + lockKey
	host, _ := os.Hostname()
	info := lockInfo{ID: randomID(), PID: os.Getpid(), Host: host, Since: time.Now().UTC().Format(time.RFC3339), Lease: s.lease.String()}
	deadline := time.Now().Add(max(wait, 0))
	for {
		info.Refreshed = time.Now().UTC().Format(time.RFC3339)
		etag, err := s.writeLock(ctx, key, info, aws.String("*"), nil)
		if err == nil {
			return s.locked(ctx, etag, info)
		}
		if !isPreconditionFailed(err) {
			return nil, fmt.Errorf("lock %s: %w", s.Location(), s.fail(key, err))
		}
		holder, holderETag, age, err := s.readLock(ctx, key)
		switch {
		case errors.Is(err, errNoLock):
			// Released meanwhile: try again, after a moment should the
			// store keep answering both requests that way.
			if err := sleep(ctx, 50*time.Millisecond); err != nil {
				return nil, fmt.Errorf("lock %s: %w", s.Location(), err)
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("lock %s: %w", s.Location(), err)
		case age > holder.staleAfter(s.lease):
			etag, err := s.writeLock(ctx, key, info, nil, aws.String(holderETag))
			if err == nil {
				return s.locked(ctx, etag, info)
			}
			if !isPreconditionFailed(err) {
				return nil, fmt.Errorf("lock %s: take over the lock of %s, unrefreshed for %s: %w",
					s.Location(), holder, age.Round(time.Second), s.fail(key, err))
			}
			continue // another writer took it over first, or its holder refreshed it
		}
		if !time.Now().Before(deadline) {
			return nil, fmt.Errorf("lock %s (waited %s; held by %s, refreshed %s ago): %w",
				s.Location(), wait, holder, age.Round(time.Second), layout.ErrLocked)
		}
		if err := sleep(ctx, min(lockPoll, time.Until(deadline))); err != nil {
			return nil, fmt.Errorf("lock %s (held by %s): %w", s.Location(), holder, err)
		}
	}
}

// sleep waits for d or the end of ctx.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// errNoLock means there is no lock object.
var errNoLock = errors.New("no lock object")

// locked records the lock as held, starts refreshing it, aborts
// interrupted uploads and returns the unlock function.
func (s *Store) locked(ctx context.Context, etag string, info lockInfo) (func() error, error) {
	h := &heldLock{etag: etag, info: info, refreshed: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	s.mu.Lock()
	s.held = h
	s.mu.Unlock()
	go s.refresh(h)
	unlock := func() error { return s.unlock(h) }
	if err := s.abortUploads(ctx); err != nil {
		_ = unlock()
		return nil, fmt.Errorf("lock %s: %w", s.Location(), err)
	}
	return unlock, nil
}

// writeLock writes the lock object conditionally and returns its ETag.
func (s *Store) writeLock(ctx context.Context, key string, info lockInfo, ifNoneMatch, ifMatch *string) (string, error) {
	body, err := json.Marshal(info)
	if err != nil {
		return "", err
	}
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(append(body, '\n')),
		ContentLength: aws.Int64(int64(len(body) + 1)),
		ContentType:   aws.String("application/json"),
		CacheControl:  aws.String("no-store"),
		IfNoneMatch:   ifNoneMatch,
		IfMatch:       ifMatch,
	})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// readLock reads the lock object: its holder, its ETag, and how long ago
// it was last written by the store's clock.
func (s *Store) readLock(ctx context.Context, key string) (lockInfo, string, time.Duration, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		if isNotFound(err) {
			return lockInfo{}, "", 0, errNoLock
		}
		return lockInfo{}, "", 0, s.fail(key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, maxLockBytes))
	if err != nil {
		return lockInfo{}, "", 0, s.fail(key, err)
	}
	var info lockInfo
	if json.Unmarshal(body, &info) != nil {
		info = lockInfo{}
	}
	now, ok := serverTime(out.ResultMetadata)
	if !ok {
		now = time.Now()
	}
	var age time.Duration
	if out.LastModified != nil {
		age = now.Sub(*out.LastModified)
	}
	return info, aws.ToString(out.ETag), age, nil
}

// refresh rewrites the lock every quarter of the lease until unlock, and
// marks it lost if another writer took it over.
func (s *Store) refresh(h *heldLock) {
	defer close(h.done)
	key := s.prefix + lockKey
	interval := s.lease / 4
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-ticker.C:
		}
		s.mu.Lock()
		etag, info := h.etag, h.info
		s.mu.Unlock()
		info.Refreshed = time.Now().UTC().Format(time.RFC3339)
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		newETag, err := s.writeLock(ctx, key, info, nil, aws.String(etag))
		cancel()
		s.mu.Lock()
		switch {
		case err == nil:
			h.etag, h.info, h.refreshed = newETag, info, time.Now()
		case isPreconditionFailed(err):
			h.lost = fmt.Errorf("lock %s: another writer took the lock over: %w", s.Location(), layout.ErrLocked)
		}
		lost := h.lost != nil
		s.mu.Unlock()
		if lost {
			return
		}
	}
}

// unlock stops refreshing the lock and deletes it, unless another writer
// took it over. Calling it again does nothing.
func (s *Store) unlock(h *heldLock) error {
	s.mu.Lock()
	if s.held != h {
		s.mu.Unlock()
		return nil
	}
	s.held = nil
	s.mu.Unlock()
	close(h.stop)
	<-h.done
	if h.lost != nil {
		return h.lost
	}
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	key := s.prefix + lockKey
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket:  aws.String(s.bucket),
		Key:     aws.String(key),
		IfMatch: aws.String(h.etag),
	})
	switch {
	case err == nil, isNotFound(err):
		return nil
	case isPreconditionFailed(err):
		return fmt.Errorf("unlock %s: another writer took the lock over: %w", s.Location(), layout.ErrLocked)
	}
	return fmt.Errorf("unlock %s: %w", s.Location(), s.fail(key, err))
}

// checkLocked refuses a write unless this store holds the lock and it is
// still its own.
func (s *Store) checkLocked() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch h := s.held; {
	case h == nil:
		return fmt.Errorf("write to %s: %w", s.Location(), layout.ErrReadOnly)
	case h.lost != nil:
		return h.lost
	case time.Since(h.refreshed) > s.lease:
		return fmt.Errorf("write to %s: the lock could not be refreshed for %s and may have been taken over: %w",
			s.Location(), time.Since(h.refreshed).Round(time.Second), layout.ErrLocked)
	}
	return nil
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

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
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/internal/syncx"
	"github.com/tfmirror/tfmirror/layout"
)

// A store has two kinds of writers. Prune takes the exclusive lock, the
// object PREFIX/.tfmirror/lock, created with a conditional write
// (If-None-Match: *) so that of two writers exactly one succeeds. Builds,
// bundle imports and the registry replica publish together: each takes a
// writer lease, its own object PREFIX/.tfmirror/writers/ID, and merges
// documents with conditional writes (see PutIf), so several publish at
// once without losing each other's versions. The two exclude each other
// by writing first and looking second: a publisher writes its lease, then
// reads the lock, and backs off (deleting its lease) while a live lock
// exists; prune writes the lock, then lists the leases, and waits while a
// live one exists. S3 reads its own writes, so of a publisher and a prune
// starting at once at least one sees the other. A publisher takes its
// lease only at its first Put or Delete: a run that changes nothing makes
// no write request.
//
// The body of each object says who holds it (pid, host, since when). S3
// has no process that would release a lock when its holder dies, so each
// is a lease: while held, the Store rewrites the object every quarter of
// the lease (conditional on its ETag, If-Match), and an object whose last
// write (its Last-Modified, compared with the store's own clock, the Date
// of the answer) is older than the lease belongs to a writer that died:
// another may take the lock over, again with a write conditional on the
// ETag it saw, so that of two writers taking over at once exactly one
// succeeds, and prune deletes a dead publisher's lease. A holder that
// finds its object taken over (its refresh refused) or that could not
// refresh it for a whole lease stops writing: Put and Delete fail with
// ErrLocked. Unlock deletes the object, conditional on its ETag, so it
// never removes a lock another writer took over.
//
// The lock relies on the store honouring If-None-Match and If-Match on
// PutObject (Amazon S3 since 2024, MinIO, versitygw, Ceph RGW, Cloudflare
// R2); a store that ignores them cannot exclude two writers, so the first
// write of a process into a bucket, the lock or the lease, is preceded by
// a probe that the store refuses what it must (see probe.go).
const (
	lockKey    = layout.PrivateDirName + "/lock"
	writersDir = layout.PrivateDirName + "/writers/"
)

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

// heldLock is a lock or lease object while this Store holds it; guarded
// by Store.mu.
type heldLock struct {
	key       string
	etag      string
	info      lockInfo
	refreshed time.Time // local clock of the last successful write
	lost      error     // set when the lock was taken over
	stop      chan struct{}
	done      chan struct{}
}

// Lock takes the store's write lock in mode. Exclusive takes the lock
// object, waiting up to wait (polling) while another writer holds it,
// then waits, up to the same deadline, for the publishers' leases to end,
// and aborts the multipart uploads interrupted writers left. Publish
// writes nothing yet: the lease is taken at the first Put or Delete,
// waiting up to wait for an exclusive holder. A lock whose holder stopped
// refreshing it for longer than the lease (Config.LockLease) is taken
// over. When the lock stays held the error wraps layout.ErrLocked and
// says by whom.
func (s *Store) Lock(ctx context.Context, wait time.Duration, mode layout.LockMode) (func() error, error) {
	s.mu.Lock()
	if s.held != nil || s.pub != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("lock %s: this store already holds it: %w", s.Location(), layout.ErrLocked)
	}
	if mode == layout.Publish {
		p := &publisher{wait: max(wait, 0)}
		s.pub = p
		s.mu.Unlock()
		return func() error { return s.unpublish(p) }, nil
	}
	s.mu.Unlock()
	if err := s.checkConditions(ctx); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(max(wait, 0))
	h, err := s.takeLock(ctx, deadline, wait)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.held = h
	s.mu.Unlock()
	unlock := func() error { return s.unlock(h) }
	if err := s.awaitPublishers(ctx, deadline, wait); err != nil {
		return nil, errors.Join(err, unlock())
	}
	if err := s.abortUploads(ctx, 0); err != nil {
		return nil, errors.Join(fmt.Errorf("lock %s: %w", s.Location(), err), unlock())
	}
	return unlock, nil
}

// takeLock takes the exclusive lock object and starts refreshing it.
func (s *Store) takeLock(ctx context.Context, deadline time.Time, wait time.Duration) (*heldLock, error) {
	key := s.prefix + lockKey
	info := newLockInfo(s.lease)
	told := false
	for {
		info.Refreshed = time.Now().UTC().Format(time.RFC3339)
		etag, err := s.writeLock(ctx, key, info, aws.String("*"), nil)
		if err == nil {
			return s.hold(key, etag, info), nil
		}
		if !isPreconditionFailed(err) {
			return nil, fmt.Errorf("lock %s: %w", s.Location(), s.fail(key, err))
		}
		holder, holderETag, age, err := s.readLock(ctx, key)
		switch {
		case errors.Is(err, errNoLock):
			// Released meanwhile: try again, after a moment should the
			// store keep answering both requests that way.
			if err := syncx.Sleep(ctx, 50*time.Millisecond); err != nil {
				return nil, fmt.Errorf("lock %s: %w", s.Location(), err)
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("lock %s: %w", s.Location(), err)
		case age > holder.staleAfter(s.lease):
			etag, err := s.writeLock(ctx, key, info, nil, aws.String(holderETag))
			if err == nil {
				return s.hold(key, etag, info), nil
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
		if !told {
			notify.Wait(ctx, "the lock of "+s.Location(), holder.String(), time.Until(deadline))
			told = true
		}
		if err := syncx.Sleep(ctx, min(lockPoll, time.Until(deadline))); err != nil {
			return nil, fmt.Errorf("lock %s (held by %s): %w", s.Location(), holder, err)
		}
	}
}

func newLockInfo(lease time.Duration) lockInfo {
	host, _ := os.Hostname()
	return lockInfo{ID: randomID(), PID: os.Getpid(), Host: host, Since: time.Now().UTC().Format(time.RFC3339), Lease: lease.String()}
}

// awaitPublishers waits, holding the exclusive lock, until no publisher's
// lease is live, deleting the leases of publishers that died.
func (s *Store) awaitPublishers(ctx context.Context, deadline time.Time, wait time.Duration) error {
	told := false
	for {
		live, err := s.livePublishers(ctx)
		if err != nil {
			return fmt.Errorf("lock %s: %w", s.Location(), err)
		}
		if len(live) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("lock %s (waited %s for %d publishing writers to finish; one is %s): %w",
				s.Location(), wait, len(live), live[0], layout.ErrLocked)
		}
		if !told {
			notify.Wait(ctx, fmt.Sprintf("%s publishing into %s", plural.Count(len(live), "build"), s.Location()), live[0].String(), time.Until(deadline))
			told = true
		}
		if err := syncx.Sleep(ctx, min(lockPoll, time.Until(deadline))); err != nil {
			return fmt.Errorf("lock %s (waiting for %s to finish publishing): %w", s.Location(), live[0], err)
		}
	}
}

// livePublishers returns the holders of the leases that are live, and
// deletes the stale ones.
func (s *Store) livePublishers(ctx context.Context) ([]lockInfo, error) {
	var live []lockInfo
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(s.bucket), Prefix: aws.String(s.prefix + writersDir),
	})
	bound := listBound{s: s, what: "list the publishing writers in " + s.url(s.prefix+writersDir)}
	for pages.HasMorePages() {
		if err := bound.next(); err != nil {
			return nil, err
		}
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list the publishing writers: %w", s.fail(s.prefix+writersDir, err))
		}
		if err := bound.add(len(page.Contents)); err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			key := aws.ToString(o.Key)
			info, etag, age, err := s.readLock(ctx, key)
			switch {
			case errors.Is(err, errNoLock):
			case err != nil:
				return nil, err
			case age > info.staleAfter(s.lease):
				_, _ = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
					Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(etag),
				})
			default:
				live = append(live, info)
			}
		}
	}
	return live, nil
}

// publisher is a Publish lock; guarded by Store.mu, but for acquire,
// which serializes the first writes.
type publisher struct {
	wait    time.Duration
	acquire sync.Mutex
	lease   *heldLock // nil until the first write
	err     error     // why the lease could not be taken
}

// publishing takes the publisher's lease if it has none yet: it writes
// the lease, then reads the exclusive lock, and while a live one exists
// deletes its lease and waits, up to the publisher's wait.
func (s *Store) publishing(ctx context.Context, p *publisher) error {
	p.acquire.Lock()
	defer p.acquire.Unlock()
	if p.lease != nil || p.err != nil {
		return p.err
	}
	if err := s.checkConditions(ctx); err != nil {
		return p.failed(ctx, err)
	}
	deadline := time.Now().Add(p.wait)
	info := newLockInfo(s.lease)
	key := s.prefix + writersDir + info.ID
	for {
		info.Refreshed = time.Now().UTC().Format(time.RFC3339)
		etag, err := s.writeLease(ctx, key, info)
		if err != nil {
			return p.failed(ctx, fmt.Errorf("write to %s: take a writer lease: %w", s.Location(), s.fail(key, err)))
		}
		holder, _, age, err := s.readLock(ctx, s.prefix+lockKey)
		if errors.Is(err, errNoLock) || err == nil && age > holder.staleAfter(s.lease) {
			h := s.hold(key, etag, info)
			s.mu.Lock()
			p.lease = h
			s.mu.Unlock()
			// Clean up after publishers that died.
			if _, err := s.livePublishers(ctx); err != nil {
				return err
			}
			return s.abortUploads(ctx, staleUploadAge)
		}
		_ = s.deleteLease(key, etag)
		if err != nil {
			return p.failed(ctx, fmt.Errorf("write to %s: %w", s.Location(), err))
		}
		if !time.Now().Before(deadline) {
			p.err = fmt.Errorf("write to %s (waited %s; the exclusive lock is held by %s, a prune): %w",
				s.Location(), p.wait, holder, layout.ErrLocked)
			return p.err
		}
		if err := syncx.Sleep(ctx, min(lockPoll, time.Until(deadline))); err != nil {
			return fmt.Errorf("write to %s (the exclusive lock is held by %s): %w", s.Location(), holder, err)
		}
	}
}

// failed keeps why the lease could not be taken, so that the writes
// waiting for it (a publication's concurrent first writes) and the later
// ones fail at once with it instead of asking the store again: a store
// that refused the lease or gave up retrying it is asked once per
// publisher. A cancelled ctx is the caller's, not the store's, and is
// not kept.
func (p *publisher) failed(ctx context.Context, err error) error {
	if ctx.Err() == nil {
		p.err = err
	}
	return err
}

// writeLease writes a publisher's lease object. The key is this writer's
// own, so a conflict (409) can only come from the store's handling of other
// writers' leases next to it (versitygw's POSIX backend answers 409
// ExistingObjectIsDirectory while another lease's removal takes their
// directory away; S3 answers 409 OperationAborted): it is retried a few
// times.
func (s *Store) writeLease(ctx context.Context, key string, info lockInfo) (string, error) {
	for attempt := 1; ; attempt++ {
		etag, err := s.writeLock(ctx, key, info, nil, nil)
		if err == nil || statusCode(err) != http.StatusConflict || attempt == leaseAttempts {
			return etag, err
		}
		if err := syncx.Sleep(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
			return "", err
		}
	}
}

// leaseAttempts bounds the writes of a lease object that conflict.
const leaseAttempts = 5

// deleteLease deletes a lease object of this store's, conditional on its
// ETag.
func (s *Store) deleteLease(key, etag string) error {
	ctx, cancel := context.WithTimeout(context.Background(), unlockTimeout)
	defer cancel()
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(key), IfMatch: aws.String(etag),
	})
	switch {
	case err == nil, isNotFound(err):
		return nil
	case isPreconditionFailed(err):
		return fmt.Errorf("unlock %s: another writer took the lock over: %w", s.Location(), layout.ErrLocked)
	}
	return fmt.Errorf("unlock %s: %w", s.Location(), s.fail(key, err))
}

// unpublish ends a Publish lock: it releases the lease, if one was taken.
func (s *Store) unpublish(p *publisher) error {
	s.mu.Lock()
	if s.pub != p {
		s.mu.Unlock()
		return nil
	}
	s.pub = nil
	s.mu.Unlock()
	p.acquire.Lock()
	h := p.lease
	p.acquire.Unlock()
	if h == nil {
		return nil
	}
	return s.release(h)
}

// errNoLock means there is no lock object.
var errNoLock = errors.New("no lock object")

// hold starts refreshing a lock or lease object just written, which the
// caller records as held.
func (s *Store) hold(key, etag string, info lockInfo) *heldLock {
	h := &heldLock{key: key, etag: etag, info: info, refreshed: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go s.refresh(h)
	return h
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
	key := h.key
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

// unlock releases the exclusive lock. Calling it again does nothing.
func (s *Store) unlock(h *heldLock) error {
	s.mu.Lock()
	if s.held != h {
		s.mu.Unlock()
		return nil
	}
	s.held = nil
	s.mu.Unlock()
	return s.release(h)
}

// release stops refreshing a lock or lease object and deletes it, unless
// another writer took it over.
func (s *Store) release(h *heldLock) error {
	close(h.stop)
	<-h.done
	s.mu.Lock()
	lost := h.lost
	s.mu.Unlock()
	if lost != nil {
		return lost
	}
	return s.deleteLease(h.key, h.etag)
}

// checkLocked refuses a write unless this store holds a lock and it is
// still its own; under a Publish lock the first write takes the lease.
func (s *Store) checkLocked(ctx context.Context) error {
	s.mu.Lock()
	h, p := s.held, s.pub
	s.mu.Unlock()
	if h == nil && p != nil {
		if err := s.publishing(ctx, p); err != nil {
			return err
		}
		s.mu.Lock()
		h = p.lease
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
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

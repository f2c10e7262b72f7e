package desttest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// Tree is the Harness of a tree (layout.TreeDestination) over the stores
// newStore opens at the locations newLocation makes (a directory, a
// bucket prefix). Every writer and every reader gets a store object of
// its own, as separate processes have; a writer takes its store's Publish
// lock, as a build does. A failing writer's store fails its Puts (and
// PutIfs, and Deletes) from the failAt-th on, before they reach the
// store.
func Tree(newLocation func(t *testing.T) string, newStore func(t *testing.T, loc string) layout.Store) Harness {
	return Harness{
		NewLocation: newLocation,
		Open: func(t *testing.T, loc string, failAt int) Writer {
			store := newStore(t, loc)
			w := Writer{Lock: func(ctx context.Context, wait time.Duration) (func() error, error) {
				return store.Lock(ctx, wait, layout.Publish)
			}}
			if failAt > 0 {
				f := &failingStore{Store: store, failAt: int64(failAt)}
				w.Failed = func() int { return int(f.failed.Load()) }
				if c, ok := store.(layout.Conditional); ok {
					store = failingConditional{f, c}
				} else {
					store = f
				}
			}
			w.Destination = layout.NewTree(store).Destination()
			return w
		},
		Listed: func(t *testing.T, loc string) mirror.Listed {
			return layout.NewTree(newStore(t, loc))
		},
		Snapshot: func(t *testing.T, loc string, _ []addrs.Provider, _ []addrs.Module) map[string]string {
			return treeSnapshot(t, newStore(t, loc))
		},
		ModuleRecords: true,
	}
}

// treeSnapshot returns every file a tree's clients can read, with the
// SHA-256 of its bytes.
func treeSnapshot(t *testing.T, s layout.Store) map[string]string {
	t.Helper()
	files, err := s.List(t.Context(), "")
	if err != nil {
		t.Fatalf("desttest: list %s: %v", s.Location(), err)
	}
	out := make(map[string]string, len(files))
	for _, rel := range files {
		data, err := s.ReadFile(t.Context(), rel, 1<<30)
		if err != nil {
			t.Fatalf("desttest: read %s: %v", rel, err)
		}
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(data))
	}
	return out
}

// errFailed is the failure of a write a test made fail.
var errFailed = errors.New("desttest: the write failed on purpose (a crash)")

// failingStore is a store whose writes fail from the failAt-th on, as if
// its process had died making it: nothing reaches the store.
type failingStore struct {
	layout.Store
	failAt int64
	writes atomic.Int64
	failed atomic.Int64
}

func (s *failingStore) fail(rel string) error {
	if n := s.writes.Add(1); n >= s.failAt {
		s.failed.Add(1)
		return fmt.Errorf("write %d (%s): %w", n, rel, errFailed)
	}
	return nil
}

func (s *failingStore) Put(ctx context.Context, rel string, c layout.Content) error {
	if err := s.fail(rel); err != nil {
		return err
	}
	return s.Store.Put(ctx, rel, c)
}

func (s *failingStore) Delete(ctx context.Context, rel string) error {
	if err := s.fail(rel); err != nil {
		return err
	}
	return s.Store.Delete(ctx, rel)
}

// failingConditional is a failingStore over a store several writers
// publish into at once.
type failingConditional struct {
	*failingStore
	c layout.Conditional
}

func (s failingConditional) ReadTagged(ctx context.Context, rel string, limit int64) ([]byte, string, error) {
	return s.c.ReadTagged(ctx, rel, limit)
}

func (s failingConditional) PutIf(ctx context.Context, rel string, c layout.Content, tag string) error {
	if err := s.fail(rel); err != nil {
		return err
	}
	return s.c.PutIf(ctx, rel, c, tag)
}

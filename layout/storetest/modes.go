package storetest

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/layout"
)

// testLockModes checks whom each lock mode excludes.
func testLockModes(t *testing.T, open func(t *testing.T) layout.Store) {
	t.Run("ExclusiveExcludesPublish", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		lockMode(t, s1, layout.Exclusive)
		expectLockedOut(t, s2, layout.Publish)
	})

	t.Run("PublishExcludesExclusive", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		unlock1 := lock(t, s1)
		put(t, s1, "first", []byte("published"))
		if unlock2, err := s2.Lock(context.Background(), 0, layout.Exclusive); err == nil {
			_ = unlock2()
			t.Fatal("an exclusive lock was taken while a publisher was writing")
		} else if !errors.Is(err, layout.ErrLocked) {
			t.Errorf("exclusive Lock: %v; want an error wrapping ErrLocked", err)
		}
		if err := unlock1(); err != nil {
			t.Fatal(err)
		}
		lockMode(t, s2, layout.Exclusive)
		put(t, s2, "first", []byte("pruned"))
	})

	t.Run("ExclusiveWaitsForPublisher", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		unlock1 := lock(t, s1)
		put(t, s1, "first", []byte("published"))
		expectExclusiveAfter(t, s2, unlock1)
	})

	t.Run("Publishers", func(t *testing.T) {
		s1, s2 := open(t), open(t)
		lock(t, s1)
		put(t, s1, "first", []byte("one"))
		if _, ok := s1.(layout.Conditional); !ok {
			// Not conditional: publishers exclude each other.
			expectLockedOut(t, s2, layout.Publish)
			return
		}
		lock(t, s2)
		put(t, s2, "second", []byte("two"))
		put(t, s1, "third", []byte("three"))
		expectContent(t, s1, "second", []byte("two"))
	})
}

// testModTime checks that a store knows when its files were written.
func testModTime(t *testing.T, open func(t *testing.T) layout.Store) {
	t.Run("StatModTime", func(t *testing.T) {
		s := open(t)
		lock(t, s)
		before := time.Now().Add(-2 * time.Second) // the store's clock may be a little behind
		put(t, s, "written.json", []byte("{}"))
		after := time.Now().Add(2 * time.Second)
		info, err := s.Stat(t.Context(), "written.json")
		if err != nil {
			t.Fatal(err)
		}
		if info.ModTime.Before(before) || info.ModTime.After(after) {
			t.Errorf("Stat ModTime = %v; want the time of the Put, between %v and %v", info.ModTime, before, after)
		}
	})
}

// expectLockedOut checks that s cannot write under a lock in mode while
// another instance holds the lock: Lock fails, or (a store that takes its
// lock at the first write) the first Put does, and nothing is written.
func expectLockedOut(t *testing.T, s layout.Store, mode layout.LockMode) {
	t.Helper()
	unlock, err := s.Lock(context.Background(), 0, mode)
	if err == nil {
		err = s.Put(t.Context(), "locked-out", layout.Content{Data: []byte("must not be written")})
		if uerr := unlock(); uerr != nil {
			t.Errorf("unlock: %v", uerr)
		}
		if err == nil {
			t.Fatalf("a %s writer wrote while another held the lock", mode)
		}
	}
	if !errors.Is(err, layout.ErrLocked) {
		t.Errorf("%s writer: %v; want an error wrapping ErrLocked", mode, err)
	}
	if _, err := s.Stat(t.Context(), "locked-out"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of what the locked-out writer tried to write: %v; want fs.ErrNotExist", err)
	}
}

// testConditional checks the conditional writes of a Conditional store,
// and that concurrent publications into it lose nothing.
func testConditional(t *testing.T, open func(t *testing.T) layout.Store) {
	t.Run("PutIf", func(t *testing.T) {
		s := open(t)
		c, ok := s.(layout.Conditional)
		if !ok {
			t.Skip("the store is not Conditional")
		}
		lock(t, s)
		if _, _, err := c.ReadTagged(t.Context(), "doc.json", 1<<20); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadTagged of a missing file: %v; want fs.ErrNotExist", err)
		}
		putIf(t, c, "doc.json", layout.Content{Data: []byte("one")}, "", nil)
		putIf(t, c, "doc.json", layout.Content{Data: []byte("two")}, "", layout.ErrChanged)
		putIf(t, c, "doc.json", layout.Content{File: writeTemp(t, []byte("file"))}, "", layout.ErrChanged)
		data, tag, err := c.ReadTagged(t.Context(), "doc.json", 1<<20)
		if err != nil || string(data) != "one" || tag == "" {
			t.Fatalf("ReadTagged = %q, tag %q, %v; want \"one\" and a tag", data, tag, err)
		}
		putIf(t, c, "doc.json", layout.Content{Data: []byte("three")}, tag, nil)
		putIf(t, c, "doc.json", layout.Content{Data: []byte("four")}, tag, layout.ErrChanged)
		expectContent(t, s, "doc.json", []byte("three"))
	})

	t.Run("PublishRetriesAfterAnotherWriter", func(t *testing.T) {
		exp := Fixture(t, t.TempDir())
		releases := fixturePublication(t, exp)
		// The first publication brings a release of the provider with two,
		// the second every other release.
		i := slices.IndexFunc(releases[1:], func(r layout.Release) bool { return r.Provider.Equals(releases[0].Provider) })
		if i < 0 {
			releases = append(releases[1:], releases[0])
		}
		s1, s2 := open(t), open(t)
		c, ok := s1.(layout.Conditional)
		if !ok {
			t.Skip("the store is not Conditional")
		}
		lock(t, s1)
		lock(t, s2)
		// Just before the first publication writes the index of the
		// provider both publish, the second publishes the other
		// releases: the first must then merge with what the second wrote.
		w := &interleaved{Store: s1, c: c, at: layout.IndexPath(releases[0].Provider), between: func() error {
			_, err := layout.NewTree(s2).PublishAll(t.Context(), layout.Refuse, releases[1:])
			return err
		}}
		if _, err := layout.NewTree(w).PublishAll(t.Context(), layout.Refuse, releases[:1]); err != nil {
			t.Fatal(err)
		}
		if w.err != nil {
			t.Fatalf("the second publication: %v", w.err)
		}
		if w.changed.Load() == 0 {
			t.Error("no conditional write was refused: the interleaving did not happen")
		}
		// Together they wrote the fixture's tree, byte for byte.
		expectList(t, s1, "", exp.Paths())
		for _, f := range exp.Files {
			expectContent(t, s1, f.Path, f.Data)
		}
	})
}

func putIf(t *testing.T, c layout.Conditional, rel string, content layout.Content, tag string, want error) {
	t.Helper()
	err := c.PutIf(t.Context(), rel, content, tag)
	switch {
	case want == nil && err != nil:
		t.Errorf("PutIf %s (tag %q): %v", rel, tag, err)
	case want != nil && !errors.Is(err, want):
		t.Errorf("PutIf %s (tag %q): %v; want an error wrapping %v", rel, tag, err, want)
	}
}

// interleaved is a Conditional store that runs another writer's work
// just before its first conditional write of one file, and counts the
// conditional writes refused.
type interleaved struct {
	layout.Store
	c       layout.Conditional
	at      string
	between func() error
	once    sync.Once
	err     error
	changed atomic.Int32
}

func (w *interleaved) ReadTagged(ctx context.Context, rel string, limit int64) ([]byte, string, error) {
	return w.c.ReadTagged(ctx, rel, limit)
}

func (w *interleaved) PutIf(ctx context.Context, rel string, content layout.Content, tag string) error {
	if rel == w.at {
		w.once.Do(func() { w.err = w.between() })
	}
	err := w.c.PutIf(ctx, rel, content, tag)
	if errors.Is(err, layout.ErrChanged) {
		w.changed.Add(1)
	}
	return err
}

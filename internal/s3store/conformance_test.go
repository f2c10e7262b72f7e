package s3store_test

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/layout/storetest"
)

// newStore opens uri on srv, with srv's environment unless cfg has one.
func newStore(t *testing.T, srv *s3test.Server, uri string, cfg s3store.Config) *s3store.Store {
	t.Helper()
	if cfg.Environ == nil {
		cfg.Environ = srv.Environ()
	}
	s, err := s3store.New(t.Context(), uri, cfg)
	if err != nil {
		t.Fatalf("New(%s): %v", uri, err)
	}
	return s
}

// uploadDir puts every file of the tree in dir into s, under the lock.
func uploadDir(t *testing.T, s *s3store.Store, dir string) {
	t.Helper()
	unlock, err := s.Lock(context.Background(), 0, layout.Publish)
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && e.Name() == layout.PrivateDirName:
			return fs.SkipDir
		case !e.Type().IsRegular():
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return s.Put(t.Context(), filepath.ToSlash(rel), layout.Content{File: p})
	})
	if uerr := unlock(); err == nil {
		err = uerr
	}
	if err != nil {
		t.Fatalf("upload %s: %v", dir, err)
	}
}

func TestReader(t *testing.T) {
	srv := s3test.Start(t)
	for _, c := range []struct{ bucket, prefix string }{
		{"reader-root", ""},
		{"reader-nested", "nested/mirror"},
	} {
		srv.CreateBucket(t, c.bucket)
		t.Run(c.bucket, func(t *testing.T) {
			storetest.TestReader(t, func(t *testing.T, dir string) layout.Reader {
				uploadDir(t, newStore(t, srv, srv.URI(c.bucket, c.prefix), s3store.Config{}), dir)
				// A reader that never wrote: what verify or a later
				// build opens.
				return newStore(t, srv, srv.URI(c.bucket, c.prefix), s3store.Config{})
			})
		})
	}
}

func TestStore(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "store")
	var (
		mu       sync.Mutex
		prefixes = map[string]string{}
	)
	storetest.TestStore(t, func(t *testing.T) layout.Store {
		// One prefix per test, so that two stores of a test share it.
		mu.Lock()
		p, ok := prefixes[t.Name()]
		if !ok {
			p = fmt.Sprintf("tests/%d", len(prefixes))
			prefixes[t.Name()] = p
		}
		mu.Unlock()
		return newStore(t, srv, srv.URI("store", p), s3store.Config{})
	})
}

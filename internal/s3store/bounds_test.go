package s3store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/hostiles3"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// hostileStore opens s3://bounds/site/ through a hostile proxy in front of
// a real store, with cfg's bounds; the bucket holds two objects.
func hostileStore(t *testing.T, cfg s3store.Config) (*s3store.Store, *hostiles3.Proxy) {
	t.Helper()
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bounds")
	direct := newStore(t, srv, "s3://bounds/site/", s3store.Config{})
	lockStore(t, direct)
	for rel, data := range map[string]string{"a/index.json": "{}", "a/b.zip": strings.Repeat("z", 4096)} {
		if err := direct.Put(t.Context(), rel, layout.Content{Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	proxy := hostiles3.Start(t, testca.New(t), srv.Endpoint)
	cfg.Environ = proxy.Environ(srv.Environ())
	return newStore(t, srv, "s3://bounds/site/", cfg), proxy
}

// A listing whose pages always have a next one stops at the bound on
// pages, or on objects, with an error naming the bucket and the bound.
func TestEndlessListingPages(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   s3store.Config
		pages int64
		want  string
	}{
		{"pages", s3store.Config{MaxListPages: 7}, 7, "more than 7 pages (700 entries so far)"},
		{"objects", s3store.Config{MaxListObjects: 450}, 5, "more than 450 objects (after 5 pages)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, proxy := hostileStore(t, tt.cfg)
			proxy.Set(hostiles3.EndlessPages, nil)
			began := time.Now()
			_, err := s.List(t.Context(), "")
			if !errors.Is(err, s3store.ErrListTooLong) {
				t.Fatalf("List: %v, want ErrListTooLong", err)
			}
			for _, want := range []string{"s3://bounds/site/", tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
			if got := proxy.Listings(); got != tt.pages {
				t.Errorf("%d pages asked for, want %d", got, tt.pages)
			}
			t.Logf("%v after %s", err, time.Since(began))
		})
	}
}

// One listing page whose body never ends is refused at the bound on a
// page's size, not read into memory.
func TestEndlessListingBody(t *testing.T) {
	s, proxy := hostileStore(t, s3store.Config{MaxListPageBytes: 1 << 20})
	proxy.Set(hostiles3.EndlessListing, nil)
	_, err := s.List(t.Context(), "")
	if !errors.Is(err, s3store.ErrAnswerTooLarge) {
		t.Fatalf("List: %v, want ErrAnswerTooLarge", err)
	}
	for _, want := range []string{"list s3://bounds/site/", "ListObjectsV2 is longer than 1048576 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if sent := proxy.Sent(); sent > 8<<20 {
		t.Errorf("the proxy sent %d bytes before the client hung up", sent)
	}
}

// An object that stops coming half-way fails the read within the stall
// timeout, whether it is read whole or streamed.
func TestObjectStall(t *testing.T) {
	const stall = 500 * time.Millisecond
	s, proxy := hostileStore(t, s3store.Config{Net: httpx.Policy{StallTimeout: stall}})
	proxy.Set(hostiles3.StallObjects, func(key string) bool { return strings.HasSuffix(key, ".zip") })
	began := time.Now()
	_, err := s.ReadFile(t.Context(), "a/b.zip", 1<<20)
	if !errors.Is(err, httpx.ErrStalled) {
		t.Fatalf("ReadFile: %v, want ErrStalled", err)
	}
	if !strings.Contains(err.Error(), "s3://bounds/site/a/b.zip") || !strings.Contains(err.Error(), "no data for 500ms") {
		t.Errorf("the error does not name the object and the limit: %v", err)
	}
	if d := time.Since(began); d > 10*stall {
		t.Errorf("ReadFile gave up after %s", d)
	}
	rc, err := s.Open(t.Context(), "a/b.zip")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	began = time.Now()
	buf := make([]byte, 1<<20)
	for err == nil {
		_, err = rc.Read(buf)
	}
	if !errors.Is(err, httpx.ErrStalled) {
		t.Fatalf("reading the opened object: %v, want ErrStalled", err)
	}
	if d := time.Since(began); d > 10*stall {
		t.Errorf("the read gave up after %s", d)
	}
}

// ListSizes gives each object's size as the listing says.
func TestListSizes(t *testing.T) {
	s, _ := hostileStore(t, s3store.Config{})
	sizes, err := s.ListSizes(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if sizes["a/b.zip"] != 4096 || sizes["a/index.json"] != 2 || len(sizes) != 2 {
		t.Errorf("ListSizes = %v", sizes)
	}
}

package s3store_test

import (
	"testing"

	"github.com/tfmirror/tfmirror/internal/httpx"

	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/hostiles3"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

// A store that keeps objects as files (versitygw's posix backend) answers
// a PUT with 409 ExistingObjectIsDirectory when another client's delete
// removed, meanwhile, the directory the PUT was creating: several builds
// into one prefix (--shard) each probing the store under .tfmirror/probe/
// and deleting their probe. The write is tried again, as any transient
// failure: the lock, the probe and the object all get through.
func TestPutRacingADeleteIsRetried(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "raced")
	proxy := hostiles3.Start(t, testca.New(t), srv.Endpoint)
	proxy.Set(hostiles3.RacedPuts, nil)
	s := newStore(t, srv, "s3://raced/site/", s3store.Config{Environ: proxy.Environ(srv.Environ()), Net: httpx.Policy{Retries: 2}})
	lockStore(t, s)
	if err := s.Put(t.Context(), "a/index.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatalf("Put: %v", err)
	}
	direct := newStore(t, srv, "s3://raced/site/", s3store.Config{})
	if got, err := direct.ReadFile(t.Context(), "a/index.json", 100); err != nil || string(got) != "{}" {
		t.Errorf("the object holds %q (%v)", got, err)
	}
}

package s3store_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror/desttest"
)

// A tree in a bucket (a real versitygw) holds to the contract of every
// destination. Each location is a prefix of one bucket; its writers share
// the Publish lock and write documents conditionally.
func TestTreeInBucketIsADestination(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "desttest")
	var n atomic.Int64
	desttest.Run(t, desttest.Tree(
		func(*testing.T) string { return srv.URI("desttest", fmt.Sprintf("mirror-%d", n.Add(1))) },
		func(t *testing.T, uri string) layout.Store { return newStore(t, srv, uri, s3store.Config{}) },
	))
}

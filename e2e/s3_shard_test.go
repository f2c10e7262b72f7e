package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/pagetest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/layout"
)

// TestShardsBuildOneBucket runs four `build --shard K/4` processes at
// once into one prefix, and one unsharded build into another: the shards
// together must leave the very objects the one build does, catalog
// included: same keys, same bytes, same Content-Type and Cache-Control.
func TestShardsBuildOneBucket(t *testing.T) {
	srv, c, proxy := wholeBuildInBucket(t)

	const n = 4
	procs := make([]*tfmirrorProc, n)
	for k := range n {
		procs[k] = startTfmirror(t, c.work, c.env, "build", "--config", "full.hcl", "--out", srv.URI(s3Bucket, "sharded/"),
			"--shard", fmt.Sprintf("%d/%d", k+1, n), "--json")
	}
	mirrored := 0
	for k, p := range procs {
		if code, _ := p.wait(t); code != 0 {
			t.Fatalf("shard %d/%d: exit %d", k+1, n, code)
		}
		mirrored += strings.Count(p.stdout.String(), `"event":"package","status":"mirrored"`)
	}
	if mirrored != 18 {
		t.Errorf("the shards mirrored %d packages together; want each of the 18 exactly once", mirrored)
	}
	t.Logf("conditional writes refused and retried: %d", proxy.Answered(http.StatusPreconditionFailed))
	sameObjects(t, srv, "whole/", "sharded/")
	bucketRecords(t, srv, "sharded/", n)
	if res := verifySite(t, c.work, c.env, srv.URI(s3Bucket, "sharded/")); res.Versions != 6 || res.Archives != 18 {
		t.Errorf("verify of the sharded prefix counted %d versions, %d archives; want 6, 18", res.Versions, res.Archives)
	}
}

// TestConcurrentBuildsIntoOneBucketLoseNothing runs six builds at once,
// each of one provider version, into one prefix; the proxy holds their
// document writes a moment so that they collide. Their conditional
// writes must be refused (412) and retried, and the prefix must end with
// every version: the objects of one build of all of them.
func TestConcurrentBuildsIntoOneBucketLoseNothing(t *testing.T) {
	srv, c, proxy := wholeBuildInBucket(t)

	proxy.Hold = func(r *http.Request) time.Duration {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".json") && strings.Contains(r.URL.Path, "/together/") &&
			(r.Header.Get("If-Match") != "" || r.Header.Get("If-None-Match") != "") {
			return 300 * time.Millisecond
		}
		return 0
	}
	var procs []*tfmirrorProc
	for _, typ := range crashProviders {
		for _, v := range crashVersions {
			manifest := fmt.Sprintf("%s-%s.hcl", typ, v)
			writeFile(t, filepath.Join(c.work, manifest), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/%s" {
  versions = %q
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, typ, v, c.reg.ServicesURL))
			procs = append(procs, startTfmirror(t, c.work, c.env, "build", "--config", manifest, "--out", srv.URI(s3Bucket, "together/")))
		}
	}
	for _, p := range procs {
		if code, _ := p.wait(t); code != 0 {
			t.Fatalf("tfmirror %s: exit %d", strings.Join(p.args, " "), code)
		}
	}
	refused := proxy.Answered(http.StatusPreconditionFailed)
	t.Logf("conditional writes refused and retried: %d", refused)
	if refused == 0 {
		t.Error("no conditional write was refused: the builds did not collide, so the test did not test the merge")
	}
	sameObjects(t, srv, "whole/", "together/")
	bucketRecords(t, srv, "together/", len(procs))
}

// bucketRecords requires the change index under prefix to list n
// records, each there: concurrent writers of the index lose none.
func bucketRecords(t *testing.T, srv *s3test.Server, prefix string, n int) {
	t.Helper()
	idx, err := layout.DecodeChangeIndex(getObject(t, srv, s3Bucket, prefix+layout.ChangeIndexPath))
	if err != nil || len(idx.Records) != n {
		t.Fatalf("the change index of %s lists %d records (%v), want one per build, %d", prefix, len(idx.Records), err, n)
	}
	for _, e := range idx.Records {
		if _, err := layout.DecodeChangeRecord(getObject(t, srv, s3Bucket, prefix+e.Path)); err != nil {
			t.Errorf("%s: %v", e.Path, err)
		}
	}
}

// wholeBuildInBucket starts an S3 server behind a counting proxy and the
// crash tests' registry, and builds full.hcl, unsharded, into the prefix
// whole/ for the concurrent builds to be compared with.
func wholeBuildInBucket(t *testing.T) (*s3test.Server, *crashRegistry, *s3Proxy) {
	t.Helper()
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	c := newCrashRegistry(t)
	proxy := startS3Proxy(t, srv.Endpoint)
	c.env = append(c.env, s3Environ(srv, proxy.URL)...)
	c.build(t, "full.hcl", srv.URI(s3Bucket, "whole/"))
	return srv, c, proxy
}

// sameObjects requires the published objects (not .tfmirror/) under two
// prefixes to be the same: keys, bytes, Content-Type and Cache-Control.
func sameObjects(t *testing.T, srv *s3test.Server, wantPrefix, gotPrefix string) {
	t.Helper()
	published := func(prefix string) []string {
		var keys []string
		for rel := range listBucket(t, srv, s3Bucket, prefix) {
			if !isPrivateKey(rel) && !isChangeFile(rel) { // each build's own record
				keys = append(keys, rel)
			}
		}
		slices.Sort(keys)
		return keys
	}
	want, got := published(wantPrefix), published(gotPrefix)
	if !slices.Equal(want, got) {
		t.Fatalf("objects differ:\n%s has\n  %s\n%s has\n  %s", wantPrefix, strings.Join(want, "\n  "), gotPrefix, strings.Join(got, "\n  "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := srv.Client(t)
	for _, rel := range want {
		wantData, gotData := getObject(t, srv, s3Bucket, wantPrefix+rel), getObject(t, srv, s3Bucket, gotPrefix+rel)
		if rel == "index.html" {
			wantData, gotData = []byte(pagetest.WithoutChanges(string(wantData))), []byte(pagetest.WithoutChanges(string(gotData)))
		}
		if !bytes.Equal(wantData, gotData) {
			t.Errorf("%s: the bytes differ", rel)
		}
		a, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s3Bucket), Key: aws.String(wantPrefix + rel)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s3Bucket), Key: aws.String(gotPrefix + rel)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(a.ContentType) != aws.ToString(b.ContentType) || aws.ToString(a.CacheControl) != aws.ToString(b.CacheControl) {
			t.Errorf("%s: Content-Type %q and Cache-Control %q, want %q and %q", rel,
				aws.ToString(b.ContentType), aws.ToString(b.CacheControl), aws.ToString(a.ContentType), aws.ToString(a.CacheControl))
		}
	}
}

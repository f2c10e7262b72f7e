package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// "tfmirror replica s3://..." writes into the bucket the replica objects
// "tfmirror replica DIR" writes into a directory holding the same mirror,
// removes what an earlier replica left that is no longer needed, and an
// up-to-date replica makes no write request.
func TestReplicaCommandIntoBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	o := replicaOrigin(t) // signed and unsigned releases
	dir := t.TempDir()
	writeManifest(t, dir, replicaManifest+o.hostBlock("registry.opentofu.org"))
	o.environ = append(o.environ, srv.Environ()...)
	o.environ = append(o.environ, "XDG_CACHE_HOME="+t.TempDir())
	bucket := srv.URI("mirror", "site/")
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site", "--out", bucket); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	site := filepath.Join(dir, "site")
	// What an earlier replica wrote for a provider the mirror no longer holds.
	stale := "replica/registry.opentofu.org/v1/providers/hashicorp/gone/versions"
	if err := os.MkdirAll(filepath.Dir(filepath.Join(site, stale)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, stale), []byte(`{"versions":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	putObject(t, srv, "mirror", "site/"+stale, []byte(`{"versions":[]}`))
	// Written an hour ago (versitygw's Last-Modified is its backend file's
	// mtime): a replica run leaves alone what another may have just written.
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(srv.Dir, "mirror", "site", filepath.FromSlash(stale)), hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	mirrorBefore := contents(bucketFiles(t, srv, "mirror", "site/"))
	delete(mirrorBefore, stale)

	proxy := startS3Counter(t, srv)
	o.environ = proxy.environ(o.environ)
	mustRun(t, o, dir, "replica", "site")
	code, stdout, stderr := o.run(t, dir, "replica", bucket)
	noSecret(t, srv, stdout, stderr)
	if code != ExitOK || !strings.Contains(stdout, "registry replica in ") || !strings.Contains(stdout, ": 2 providers, 3 versions, 4 packages") {
		t.Fatalf("replica %s: exit %d\n%s%s", bucket, code, stdout, stderr)
	}
	if w := proxy.takeWrites(); len(w) == 0 {
		t.Error("the replica made no write request")
	}

	local, remote := map[string]string{}, map[string]string{}
	for rel, data := range publishedFiles(t, site) {
		if strings.HasPrefix(rel, "replica/") {
			local[rel] = data
		}
	}
	objects := bucketFiles(t, srv, "mirror", "site/")
	for key, obj := range objects {
		if strings.HasPrefix(key, "replica/") {
			remote[key] = obj.data
		}
		if strings.HasSuffix(key, ".json") && obj.contentType != "application/json" {
			t.Errorf("%s has Content-Type %q", key, obj.contentType)
		}
	}
	if _, ok := local[stale]; ok {
		t.Errorf("%s was kept in the directory", stale)
	}
	if len(local) == 0 {
		t.Fatal("no replica in the directory")
	}
	diffSnapshots(t, local, remote)
	for key, data := range mirrorBefore {
		if strings.HasPrefix(key, "replica/") || key == "index.html" { // the page shows the replica's client configuration
			continue
		}
		if contents(objects)[key] != data {
			t.Errorf("%s of the mirror changed", key)
		}
	}

	// Up to date: nothing is written, not even a lock object.
	code, stdout, stderr = o.run(t, dir, "replica", bucket)
	if code != ExitOK {
		t.Fatalf("replica again: exit %d\n%s%s", code, stdout, stderr)
	}
	if w := proxy.takeWrites(); len(w) > 0 {
		t.Errorf("an up-to-date replica made write requests: %v", w)
	}
	if after := bucketFiles(t, srv, "mirror", "site/"); !mapsEqual(objects, after) {
		t.Error("an up-to-date replica changed objects")
	}

	// A missing bucket is named, with no secret; nothing is created.
	code, stdout, stderr = o.run(t, dir, "replica", srv.URI("no-such-bucket", "site/"))
	noSecret(t, srv, stdout, stderr)
	if code == ExitOK || !strings.Contains(stderr, "no-such-bucket") {
		t.Errorf("missing bucket: exit %d\n%s%s", code, stdout, stderr)
	}
	if srv.BucketExists(t, "no-such-bucket") {
		t.Error("replica created the bucket")
	}
}

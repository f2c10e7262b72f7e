package cli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// s3Counter is a reverse proxy to an S3 endpoint that records every write
// request (PUT, POST, DELETE) made through it, so a test can tell that a
// command wrote nothing at all, not even a lock object, and counts the
// archives (.zip objects) read through it.
type s3Counter struct {
	url string

	mu           sync.Mutex
	writes       []string // "METHOD /bucket/key"
	archiveReads int
}

func startS3Counter(t *testing.T, srv *s3test.Server) *s3Counter {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	c := &s3Counter{}
	// The Host header stays the proxy's: it is part of the signature.
	rp := httputil.NewSingleHostReverseProxy(target)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			c.mu.Lock()
			c.writes = append(c.writes, r.Method+" "+r.URL.Path)
			c.mu.Unlock()
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".zip") {
			c.mu.Lock()
			c.archiveReads++
			c.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c.url = hs.URL
	return c
}

// environ is environ with the S3 endpoint replaced by the proxy.
func (c *s3Counter) environ(environ []string) []string {
	out := []string{"AWS_ENDPOINT_URL_S3=" + c.url}
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "AWS_ENDPOINT_URL_S3=") {
			out = append(out, kv)
		}
	}
	return out
}

// takeArchiveReads returns how many archives were read since the last
// call.
func (c *s3Counter) takeArchiveReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.archiveReads
	c.archiveReads = 0
	return n
}

// takeWrites returns the writes seen since the last call.
func (c *s3Counter) takeWrites() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// putObject stores data at key with the SDK, bypassing tfmirror (no
// SHA-256 metadata), as another tool would.
func putObject(t *testing.T, srv *s3test.Server, bucket, key string, data []byte) {
	t.Helper()
	if _, err := srv.Client(t).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	}); err != nil {
		t.Fatal(err)
	}
}

// noSecret fails the test if any output holds the server's secret key.
func noSecret(t *testing.T, srv *s3test.Server, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		if strings.Contains(out, srv.SecretKey) {
			t.Errorf("the secret access key was printed:\n%s", out)
		}
	}
}

// A bucket is bundled exactly as a directory holding the same mirror is,
// byte for byte, and reading it writes nothing to it: no lock is taken.
func TestBundleCreateFromBucket(t *testing.T) {
	srv := s3test.Start(t)
	o, dir, bucket := bucketAndSite(t, srv)
	// A file that is not part of the mirror, on both sides.
	if err := os.WriteFile(filepath.Join(dir, "site", "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	putObject(t, srv, "mirror", "site/notes.txt", []byte("hello"))
	proxy := startS3Counter(t, srv)
	o.environ = proxy.environ(o.environ)
	work := t.TempDir()
	lock := "# This file is maintained automatically by \"tofu init\".\n"
	if err := os.MkdirAll(filepath.Join(work, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "app", ".terraform.lock.hcl"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}

	fromDir := mustRun(t, o, work, "bundle", "create", filepath.Join(dir, "site"), "--out", "dir.tar.gz", "--lock-files", "app")
	code, fromBucket, stderr := o.run(t, work, "bundle", "create", bucket, "--out", "out/bucket.tar.gz", "--lock-files", "app")
	noSecret(t, srv, fromBucket, stderr)
	if code != ExitOK {
		t.Fatalf("bundle create %s: exit %d\n%s%s", bucket, code, fromBucket, stderr)
	}
	if w := proxy.takeWrites(); len(w) > 0 {
		t.Errorf("bundle create wrote to the bucket: %v", w)
	}
	a, _ := os.ReadFile(filepath.Join(work, "dir.tar.gz"))
	b, _ := os.ReadFile(filepath.Join(work, "out", "bucket.tar.gz"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("the bundle of the bucket (%d bytes) differs from the bundle of the directory (%d bytes)", len(b), len(a))
	}
	// The same report, but for the bundle's name.
	if want := strings.ReplaceAll(fromDir, "dir.tar.gz", "out/bucket.tar.gz"); fromBucket != want ||
		!strings.Contains(fromBucket, "skipped  notes.txt: not part of the mirror") || !strings.Contains(fromBucket, "bundled 1 provider, 1 version, 2 archives") {
		t.Errorf("create output from the bucket:\n%s\nfrom the directory:\n%s", fromBucket, fromDir)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "out", ".tmp-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}

	// The bundle of the bucket imports like any other.
	dest := filepath.Join(t.TempDir(), "imported")
	mustRun(t, o, work, "bundle", "import", filepath.Join(work, "out", "bucket.tar.gz"), "--out", dest)
	want := publishedFiles(t, filepath.Join(dir, "site"))
	delete(want, "notes.txt")
	diffSnapshots(t, want, publishedFiles(t, dest))

	// An empty prefix holds no mirror.
	code, stdout, stderr := o.run(t, work, "bundle", "create", srv.URI("mirror", "nothing/"), "--out", "empty.tar.gz")
	if code != ExitUsage || !strings.Contains(stderr, "s3://mirror/nothing/: the mirror holds no provider and no module") {
		t.Errorf("empty prefix: exit %d\n%s%s", code, stdout, stderr)
	}
	// A damaged archive is not bundled, and the refusal names it.
	archive := "site/" + fooDir + "terraform-provider-foo_1.0.0_darwin_arm64.zip"
	data := []byte(contents(bucketFiles(t, srv, "mirror", ""))[archive])
	putObject(t, srv, "mirror", archive, flip(data, len(data)/2))
	proxy.takeWrites()
	code, stdout, stderr = o.run(t, work, "bundle", "create", bucket, "--out", "broken.tar.gz")
	noSecret(t, srv, stdout, stderr)
	if code != ExitVerification || !strings.Contains(stderr, "no bundle was written") ||
		!strings.Contains(stdout, "problem  "+fooDir+"terraform-provider-foo_1.0.0_darwin_arm64.zip") ||
		!strings.Contains(stdout, " s3://mirror/"+archive+":") || strings.Contains(stdout, ".tmp-") {
		t.Errorf("create from a damaged bucket: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "broken.tar.gz")); !os.IsNotExist(err) {
		t.Errorf("a bundle was written: %v", err)
	}
	if w := proxy.takeWrites(); len(w) > 0 {
		t.Errorf("bundle create wrote to the bucket: %v", w)
	}
	// A missing bucket is named, with no secret.
	code, stdout, stderr = o.run(t, work, "bundle", "create", srv.URI("no-such-bucket", "x/"), "--out", "x.tar.gz")
	noSecret(t, srv, stdout, stderr)
	if code == ExitOK || !strings.Contains(stderr, "no-such-bucket") {
		t.Errorf("missing bucket: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A bundle imported into a bucket gives the objects a directory import
// gives the files, with the content types clients need; importing it
// again writes nothing, and a bundle that conflicts with the bucket is
// refused with the conflict named and nothing written.
func TestBundleImportIntoBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	o := newOrigin(t)
	site := builtSite(t, o)
	o.environ = append(o.environ, srv.Environ()...)
	proxy := startS3Counter(t, srv)
	o.environ = proxy.environ(o.environ)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where a bundle for a bucket is unpacked
	work := t.TempDir()
	file := filepath.Join(work, "b.tar.gz")
	mustRun(t, o, work, "bundle", "create", site, "--out", file)

	dir := filepath.Join(t.TempDir(), "imported")
	mustRun(t, o, work, "bundle", "import", file, "--out", dir)
	bucket := srv.URI("mirror", "air/gapped/")
	code, stdout, stderr := o.run(t, work, "bundle", "import", file, "--out", bucket)
	noSecret(t, srv, stdout, stderr)
	if code != ExitOK || !strings.Contains(stdout, "imported 1 provider, 1 version, 2 archives into "+bucket) {
		t.Fatalf("bundle import --out %s: exit %d\n%s%s", bucket, code, stdout, stderr)
	}
	if w := proxy.takeWrites(); len(w) == 0 {
		t.Error("the import made no write request")
	}
	objects := bucketFiles(t, srv, "mirror", "air/gapped/")
	diffSnapshots(t, publishedFiles(t, dir), withoutChanges(contents(objects)))
	for key, obj := range objects {
		if strings.HasSuffix(key, ".json") && obj.contentType != "application/json" {
			t.Errorf("%s has Content-Type %q", key, obj.contentType)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("staging left behind in $TMPDIR: %v", left)
	}
	if out := mustRun(t, o, work, "verify", bucket); !strings.Contains(out, " 0 problems, 0 warnings") {
		t.Errorf("verify %s:\n%s", bucket, out)
	}

	// Again: nothing to write, and no request that writes.
	proxy.takeWrites()
	again := mustRun(t, o, work, "bundle", "import", file, "--out", bucket)
	if !strings.Contains(again, ": 0 files of the bundle written") {
		t.Errorf("importing the same bundle again:\n%s", again)
	}
	if w := proxy.takeWrites(); len(w) > 0 {
		t.Errorf("importing the same bundle again made write requests: %v", w)
	}
	if after := bucketFiles(t, srv, "mirror", "air/gapped/"); !mapsEqual(objects, after) {
		t.Errorf("importing the same bundle again changed objects")
	}

	// An archive of the bucket with other bytes: refused, named, untouched.
	archive := fooDir + "terraform-provider-foo_1.0.0_linux_amd64.zip"
	data := []byte(objects[archive].data)
	putObject(t, srv, "mirror", "air/gapped/"+archive, flip(data, len(data)/2))
	before := bucketFiles(t, srv, "mirror", "air/gapped/")
	proxy.takeWrites()
	code, stdout, stderr = o.run(t, work, "bundle", "import", file, "--out", bucket)
	noSecret(t, srv, stdout, stderr)
	if code != ExitVerification || !strings.Contains(stdout, "problem  "+archive+": the destination already holds different bytes") {
		t.Errorf("conflicting import: exit %d, want %d naming the archive\n%s%s", code, ExitVerification, stdout, stderr)
	}
	if w := proxy.takeWrites(); len(w) > 0 {
		t.Errorf("a refused import made write requests: %v", w)
	}
	if after := bucketFiles(t, srv, "mirror", "air/gapped/"); !mapsEqual(before, after) {
		t.Errorf("a refused import changed objects")
	}

	// A bucket holds only the network layout.
	code, stdout, stderr = o.run(t, work, "bundle", "import", file, "--out", srv.URI("mirror", "fs/"), "--layout", "packed")
	if code != ExitUsage || !strings.Contains(stderr, "s3://mirror/fs/: a bucket holds a network mirror; --layout packed needs a directory") {
		t.Errorf("--layout packed into a bucket: exit %d\n%s%s", code, stdout, stderr)
	}
	if w := proxy.takeWrites(); len(w) > 0 {
		t.Errorf("a refused import made write requests: %v", w)
	}
	// A missing bucket is named, with no secret.
	code, stdout, stderr = o.run(t, work, "bundle", "import", file, "--out", srv.URI("no-such-bucket", "x/"))
	noSecret(t, srv, stdout, stderr)
	if code == ExitOK || !strings.Contains(stderr, "no-such-bucket") {
		t.Errorf("missing bucket: exit %d\n%s%s", code, stdout, stderr)
	}
	if srv.BucketExists(t, "no-such-bucket") {
		t.Error("the import created the bucket")
	}
}

func mapsEqual(a, b map[string]s3Object) bool {
	if len(a) != len(b) {
		return false
	}
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if w, ok := b[k]; !ok || w != a[k] {
			return false
		}
	}
	return true
}

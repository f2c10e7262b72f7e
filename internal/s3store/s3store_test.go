package s3store_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/s3store"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/layout"
)

func TestParseURI(t *testing.T) {
	for _, c := range []struct{ uri, bucket, prefix string }{
		{"s3://bucket", "bucket", ""},
		{"s3://bucket/", "bucket", ""},
		{"s3://bucket//", "bucket", ""},
		{"s3://my.bucket-1/mirror", "my.bucket-1", "mirror/"},
		{"s3://bucket/mirror/", "bucket", "mirror/"},
		{"s3://bucket//a/b//", "bucket", "a/b/"},
		{"s3://Legacy_Bucket/x", "Legacy_Bucket", "x/"},
	} {
		b, p, err := s3store.ParseURI(c.uri)
		if err != nil || b != c.bucket || p != c.prefix {
			t.Errorf("ParseURI(%q) = %q, %q, %v; want %q, %q", c.uri, b, p, err, c.bucket, c.prefix)
		}
	}
	for _, uri := range []string{
		"", "bucket/prefix", "https://bucket/prefix", "S3://bucket/", "s3://", "s3:///prefix",
		"s3://ab/", "s3://-bucket/", "s3://bucket-/", "s3://buc ket/", "s3://bucket/a/../b",
		"s3://bucket/a/./b", "s3://bucket/a//b", "s3://bucket/a?x=1", "s3://bucket/a#f",
		"s3://bucket/.tfmirror/", "s3://bucket:9000/", "s3://" + strings.Repeat("b", 64) + "/",
	} {
		if b, p, err := s3store.ParseURI(uri); err == nil {
			t.Errorf("ParseURI(%q) = %q, %q; want an error", uri, b, p)
		}
	}
	_, _, err := s3store.ParseURI("s3://AKIAEXAMPLE:topsecret@bucket/prefix/")
	if err == nil || strings.Contains(err.Error(), "topsecret") {
		t.Errorf("a URI with credentials: %v; want an error that does not repeat them", err)
	}
}

func TestLocation(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "loc")
	for uri, want := range map[string]string{
		"s3://loc":          "s3://loc/",
		"s3://loc/a/b":      "s3://loc/a/b/",
		"s3://loc//a/b//":   "s3://loc/a/b/",
		"s3://loc/mirror/":  "s3://loc/mirror/",
		"s3://loc/mirror//": "s3://loc/mirror/",
	} {
		s := newStore(t, srv, uri, s3store.Config{})
		if got := s.Location(); got != want {
			t.Errorf("Location of %s = %q, want %q", uri, got, want)
		}
		if strings.Contains(s.Location(), srv.SecretKey) || strings.Contains(s.Location(), srv.AccessKey) {
			t.Errorf("Location %q names a credential", s.Location())
		}
	}
}

// lockStore takes s's lock for the rest of the test.
func lockStore(t *testing.T, s *s3store.Store) {
	t.Helper()
	unlock, err := s.Lock(context.Background(), 0, layout.Publish)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unlock(); err != nil {
			t.Errorf("unlock: %v", err)
		}
	})
}

func headObject(t *testing.T, srv *s3test.Server, bucket, key string) *s3.HeadObjectOutput {
	t.Helper()
	out, err := srv.Client(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("HeadObject %s: %v", key, err)
	}
	return out
}

func writeFile(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "content")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The headers clients and CDNs see are stored with each object, with the
// content's SHA-256 in its metadata, whether it came from bytes or a file.
func TestObjectHeaders(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "headers")
	const immutable = "public, max-age=31536000, immutable"
	const document = "public, max-age=60"
	cases := []struct {
		rel, contentType, cacheControl string
	}{
		{"registry.opentofu.org/hashicorp/aws/index.json", "application/json", document},
		{"registry.opentofu.org/hashicorp/aws/5.80.0.json", "application/json", document},
		{"catalog.json", "application/json", document},
		{"registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.80.0_provenance.json", "application/json", document},
		{"registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.80.0_linux_amd64.zip", "application/zip", immutable},
		{"registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.80.0_SHA256SUMS", "text/plain; charset=utf-8", immutable},
		{"registry.opentofu.org/hashicorp/aws/terraform-provider-aws_5.80.0_SHA256SUMS.sig", "application/pgp-signature", immutable},
		{"catalog.json.asc", "application/pgp-signature", document},
		{"changes.atom", "application/atom+xml", document},
		{"index.html", "text/html; charset=utf-8", document},
		{"README", "application/octet-stream", ""},
	}
	s := newStore(t, srv, "s3://headers/site/", s3store.Config{})
	lockStore(t, s)
	for i, c := range cases {
		data := []byte(fmt.Sprintf("content of %s", c.rel))
		content := layout.Content{Data: data}
		if i%2 == 1 {
			content = layout.Content{File: writeFile(t, data)}
		}
		if err := s.Put(t.Context(), c.rel, content); err != nil {
			t.Fatal(err)
		}
		h := headObject(t, srv, "headers", "site/"+c.rel)
		if got := aws.ToString(h.ContentType); got != c.contentType {
			t.Errorf("%s: Content-Type %q, want %q", c.rel, got, c.contentType)
		}
		if got := aws.ToString(h.CacheControl); got != c.cacheControl {
			t.Errorf("%s: Cache-Control %q, want %q", c.rel, got, c.cacheControl)
		}
		sum := sha256.Sum256(data)
		if got := h.Metadata["sha256"]; got != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: metadata sha256 %q, want %x", c.rel, got, sum)
		}
		info, err := s.Stat(t.Context(), c.rel)
		if err != nil || info.SHA256 != sum || info.Size != int64(len(data)) {
			t.Errorf("%s: Stat = %+v, %v; want size %d and SHA-256 %x", c.rel, info, err, len(data), sum)
		}
	}
}

// A file whose digest the caller gives (a publication's archive, whose zh:
// hash it checked) is uploaded signed with that digest: the metadata holds
// it, and a file whose bytes no longer hash to it (changed after it was
// checked) is refused by the store and never becomes an object. (Parts of
// a multipart upload are signed with their own hashes, which the SDK
// computes.)
func TestPutSignsWithTheCallersDigest(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "digest")
	s := newStore(t, srv, "s3://digest/", s3store.Config{})
	lockStore(t, s)
	archive := []byte("archive")
	checked := sha256.Sum256(archive)
	if err := s.Put(t.Context(), "a/x.zip", layout.Content{File: writeFile(t, archive), SHA256: checked}); err != nil {
		t.Fatal(err)
	}
	if got := headObject(t, srv, "digest", "a/x.zip").Metadata["sha256"]; got != hex.EncodeToString(checked[:]) {
		t.Errorf("metadata sha256 %q, want the caller's %x", got, checked)
	}

	changed := writeFile(t, []byte("archive, changed after its check"))
	err := s.Put(t.Context(), "a/y.zip", layout.Content{File: changed, SHA256: checked})
	if err == nil || !strings.Contains(err.Error(), "s3://digest/a/y.zip: the store received bytes whose SHA-256 is not "+hex.EncodeToString(checked[:])) {
		t.Errorf("Put of a file that does not hash to the caller's digest: %v; want an error naming the object and the digest", err)
	}
	if _, err := s.Stat(t.Context(), "a/y.zip"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after the refused upload, Stat = %v; want no object", err)
	}
}

func TestCacheControlConfigurable(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "cachecontrol")
	s := newStore(t, srv, "s3://cachecontrol/", s3store.Config{
		ImmutableCacheControl: "public, max-age=600",
		DocumentCacheControl:  s3store.NoCacheControl,
	})
	lockStore(t, s)
	for rel, want := range map[string]string{"a/x.zip": "public, max-age=600", "a/index.json": ""} {
		if err := s.Put(t.Context(), rel, layout.Content{Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(headObject(t, srv, "cachecontrol", rel).CacheControl); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", rel, got, want)
		}
	}
}

// An object written by someone else carries no digest: Stat says so with
// a zero SHA-256, and the tree hashes the content instead.
func TestStatWithoutDigest(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "nodigest")
	data := []byte("uploaded by another tool")
	_, err := srv.Client(t).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String("nodigest"), Key: aws.String("m/a.zip"), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, srv, "s3://nodigest/m/", s3store.Config{})
	info, err := s.Stat(t.Context(), "a.zip")
	if err != nil || info.Size != int64(len(data)) || info.SHA256 != [sha256.Size]byte{} {
		t.Errorf("Stat = %+v, %v; want size %d and no digest", info, err, len(data))
	}
	sum, err := layout.NewTree(s).Digest(t.Context(), "a.zip")
	if err != nil || sum != sha256.Sum256(data) {
		t.Errorf("Digest = %x, %v; want %x", sum, err, sha256.Sum256(data))
	}
}

func TestWritesOutsideTheTreeRefused(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "paths")
	s := newStore(t, srv, "s3://paths/m/", s3store.Config{})
	lockStore(t, s)
	for _, rel := range []string{"", ".", "/abs", "../up", "a/../b", "a//b", ".tfmirror/lock", ".tfmirror"} {
		if err := s.Put(t.Context(), rel, layout.Content{Data: []byte("x")}); err == nil {
			t.Errorf("Put(%q) succeeded", rel)
		}
		if err := s.Delete(t.Context(), rel); err == nil && rel != "" {
			t.Errorf("Delete(%q) succeeded", rel)
		}
	}
}

// versitygw checks signatures; a wrong secret or an unknown key is refused
// at New, quickly (no retries), with the bucket named and no secret shown.
func TestWrongCredentials(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "creds")
	const wrongSecret = "wrong-secret-0123456789abcdef"
	for name, keys := range map[string][2]string{
		"wrong secret": {srv.AccessKey, wrongSecret},
		"unknown key":  {"AKUNKNOWN000000000", wrongSecret},
	} {
		t.Run(name, func(t *testing.T) {
			env := append(srv.Environ(), "AWS_ACCESS_KEY_ID="+keys[0], "AWS_SECRET_ACCESS_KEY="+keys[1])
			start := time.Now()
			_, err := s3store.New(t.Context(), "s3://creds/m/", s3store.Config{Environ: env})
			took := time.Since(start)
			if err == nil {
				t.Fatal("New with wrong credentials succeeded")
			}
			msg := err.Error()
			t.Logf("error after %s: %s", took.Round(time.Millisecond), msg)
			if !strings.Contains(msg, "refused the credentials for bucket creds") {
				t.Errorf("the error does not say the credentials for the bucket were refused: %s", msg)
			}
			for _, secret := range []string{wrongSecret, srv.SecretKey} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error shows a secret: %s", msg)
				}
			}
			if took > 3*time.Second {
				t.Errorf("refused credentials took %s: retried?", took)
			}
		})
	}
}

func TestMissingBucket(t *testing.T) {
	srv := s3test.Start(t)
	_, err := s3store.New(t.Context(), "s3://never-created/m/", s3store.Config{Environ: srv.Environ()})
	if !errors.Is(err, s3store.ErrNoSuchBucket) {
		t.Fatalf("New: %v; want an error wrapping ErrNoSuchBucket", err)
	}
	if !strings.Contains(err.Error(), "never-created") {
		t.Errorf("the error does not name the bucket: %v", err)
	}
	if srv.BucketExists(t, "never-created") {
		t.Error("New created the bucket")
	}
}

func TestEndpointDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"AWS_ACCESS_KEY_ID=AKDOWN", "AWS_SECRET_ACCESS_KEY=down-secret", "AWS_REGION=us-east-1",
		"AWS_ENDPOINT_URL_S3=" + endpoint, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
	}
	start := time.Now()
	_, err = s3store.New(t.Context(), "s3://bucket/m/", s3store.Config{Environ: env})
	took := time.Since(start)
	if err == nil {
		t.Fatal("New with the endpoint down succeeded")
	}
	t.Logf("error after %s: %v", took.Round(time.Millisecond), err)
	if !strings.Contains(err.Error(), "cannot reach the S3 endpoint "+endpoint) {
		t.Errorf("the error does not name the endpoint %s: %v", endpoint, err)
	}
	if strings.Contains(err.Error(), "down-secret") {
		t.Errorf("the error shows the secret: %v", err)
	}
	if took > 45*time.Second {
		t.Errorf("New took %s with the endpoint down", took)
	}
}

// A file above the multipart threshold is uploaded in parts and reads
// back equal; its digest is the whole file's.
func TestLargeFileMultipart(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "large")
	const size = 80 << 20
	src := filepath.Join(t.TempDir(), "large.zip")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	// Mostly holes, with distinct bytes in every part, so that a part in
	// the wrong place changes the digest.
	for off := int64(0); off < size; off += 5 << 20 {
		if _, err := f.WriteAt([]byte(fmt.Sprintf("block at %d", off)), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := hashFile(t, src)

	s := newStore(t, srv, "s3://large/m/", s3store.Config{})
	lockStore(t, s)
	const rel = "host/ns/type/terraform-provider-type_1.0.0_linux_amd64.zip"
	if err := s.Put(t.Context(), rel, layout.Content{File: src}); err != nil {
		t.Fatal(err)
	}
	h := headObject(t, srv, "large", "m/"+rel)
	if etag := aws.ToString(h.ETag); !strings.Contains(etag, "-") {
		t.Errorf("ETag %s is not a multipart upload's", etag)
	}
	if got := aws.ToString(h.ContentType); got != "application/zip" {
		t.Errorf("Content-Type %q after a multipart upload", got)
	}
	info, err := s.Stat(t.Context(), rel)
	if err != nil || info.Size != size || info.SHA256 != want {
		t.Errorf("Stat = %+v, %v; want size %d, SHA-256 %x", info, err, size, want)
	}
	body, err := s.Open(t.Context(), rel)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	hash := sha256.New()
	n, err := io.Copy(hash, body)
	if err != nil || n != size || [sha256.Size]byte(hash.Sum(nil)) != want {
		t.Errorf("read back %d bytes with SHA-256 %x (%v); want %d, %x", n, hash.Sum(nil), err, size, want)
	}
	if _, err := s.ReadFile(t.Context(), rel, 1<<20); err == nil {
		t.Error("ReadFile of 80 MiB with a limit of 1 MiB succeeded")
	}
}

func hashFile(t *testing.T, p string) [sha256.Size]byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// Lock uploads interrupted by a killed process are aborted by the next
// Lock, under the store's prefix only.
func TestLockAbortsInterruptedUploads(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "uploads")
	c := srv.Client(t)
	for _, key := range []string{"m/a.zip", "other/b.zip"} {
		if _, err := c.CreateMultipartUpload(t.Context(), &s3.CreateMultipartUploadInput{Bucket: aws.String("uploads"), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	unlock, err := newStore(t, srv, "s3://uploads/m/", s3store.Config{}).Lock(context.Background(), 0, layout.Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unlock() }()
	out, err := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("uploads")})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range out.Uploads {
		left = append(left, aws.ToString(u.Key))
	}
	if len(left) != 1 || left[0] != "other/b.zip" {
		t.Errorf("uploads left after Lock: %q; want only other/b.zip", left)
	}
}

func TestLockExclusion(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "lock")
	s1 := newStore(t, srv, "s3://lock/m/", s3store.Config{})
	s2 := newStore(t, srv, "s3://lock/m/", s3store.Config{})
	unlock1, err := s1.Lock(context.Background(), 0, layout.Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s2.Lock(context.Background(), time.Second, layout.Exclusive)
	if !errors.Is(err, layout.ErrLocked) {
		t.Fatalf("second Lock: %v; want an error wrapping ErrLocked", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("second Lock gave up after %s, before its wait of 1s", took)
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("the error does not say who holds the lock (%s): %v", want, err)
	}
	if err := s2.Put(t.Context(), "f", layout.Content{Data: []byte("x")}); !errors.Is(err, layout.ErrReadOnly) {
		t.Errorf("Put without the lock: %v", err)
	}
	if _, err := s1.Lock(context.Background(), 0, layout.Exclusive); !errors.Is(err, layout.ErrLocked) {
		t.Errorf("Lock of a store that holds it: %v; want ErrLocked", err)
	}
	if err := unlock1(); err != nil {
		t.Fatal(err)
	}
	if err := unlock1(); err != nil {
		t.Errorf("second unlock: %v", err)
	}
	lockStore(t, s2)
	// The lock object is private: never listed.
	if files, err := s2.List(t.Context(), ""); err != nil || len(files) != 0 {
		t.Errorf("List = %q, %v; want nothing", files, err)
	}
}

func putLockObject(t *testing.T, srv *s3test.Server, bucket, key string, body any) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	_, err = srv.Client(t).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
	})
	if err != nil {
		t.Fatal(err)
	}
}

func readLockObject(t *testing.T, srv *s3test.Server, bucket, key string) map[string]any {
	t.Helper()
	out, err := srv.Client(t).GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(out.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The lock of a writer that died (its lock object no longer refreshed) is
// taken over once it is older than the lease.
func TestLockTakesOverAStaleLock(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "stale")
	const key = "m/.tfmirror/lock"
	putLockObject(t, srv, "stale", key, map[string]any{"pid": 999999, "host": "crashed-host", "since": "2020-01-01T00:00:00Z"})

	s := newStore(t, srv, "s3://stale/m/", s3store.Config{LockLease: time.Second})
	// Not older than the lease yet: held.
	if _, err := s.Lock(context.Background(), 0, layout.Exclusive); !errors.Is(err, layout.ErrLocked) || !strings.Contains(err.Error(), "crashed-host") {
		t.Fatalf("Lock of a fresh lock: %v; want ErrLocked naming its holder", err)
	}
	start := time.Now()
	unlock, err := s.Lock(context.Background(), 30*time.Second, layout.Exclusive)
	if err != nil {
		t.Fatalf("Lock waiting for the lease to run out: %v", err)
	}
	t.Logf("took the lock over after %s", time.Since(start).Round(time.Millisecond))
	if got := readLockObject(t, srv, "stale", key); got["pid"] != float64(os.Getpid()) {
		t.Errorf("the lock object holds %v after the takeover", got)
	}
	if err := s.Put(t.Context(), "f.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Errorf("Put after the takeover: %v", err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("stale"), Key: aws.String(key)}); err == nil {
		t.Error("the lock object is still there after unlock")
	}
}

// A live holder refreshes its lock, so it is never taken over however
// long it holds it; a holder whose lock was taken over all the same stops
// writing.
func TestLockRefreshedWhileHeld(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "refresh")
	cfg := s3store.Config{LockLease: time.Second}
	s1 := newStore(t, srv, "s3://refresh/m/", cfg)
	s2 := newStore(t, srv, "s3://refresh/m/", cfg)
	unlock1, err := s1.Lock(context.Background(), 0, layout.Exclusive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Lock(context.Background(), 3*time.Second, layout.Exclusive); !errors.Is(err, layout.ErrLocked) {
		t.Fatalf("Lock while a live holder refreshes its lock: %v; want ErrLocked", err)
	}
	if err := s1.Put(t.Context(), "f.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatalf("Put by the holder after 3 leases: %v", err)
	}

	// Another writer overwrites the lock (as a takeover would): the
	// holder notices at its next refresh and stops writing.
	putLockObject(t, srv, "refresh", "m/.tfmirror/lock", map[string]any{"pid": 1, "host": "other"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s1.Put(t.Context(), "f.json", layout.Content{Data: []byte("[]")})
		if errors.Is(err, layout.ErrLocked) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Put after the lock was taken over: %v; want ErrLocked", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := unlock1(); !errors.Is(err, layout.ErrLocked) {
		t.Errorf("unlock of a lock taken over: %v; want ErrLocked", err)
	}
	// It left the other writer's lock alone.
	if got := readLockObject(t, srv, "refresh", "m/.tfmirror/lock"); got["host"] != "other" {
		t.Errorf("the lock object holds %v; want the other writer's", got)
	}
}

// Settings in Config.Environ win over the process environment the SDK
// reads itself.
func TestEnvironWinsOverProcessEnvironment(t *testing.T) {
	ca := testca.New(t)
	caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	otherCA, _, _ := testca.New(t).WriteFiles(t, t.TempDir(), "127.0.0.1")
	srv := s3test.StartTLS(t, certFile, keyFile)
	srv.CreateBucket(t, "environ")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKPROCESS")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "process-secret")
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_REGION", "eu-west-3")
	t.Setenv("AWS_CA_BUNDLE", otherCA)
	s := newStore(t, srv, "s3://environ/", s3store.Config{Environ: append(srv.Environ(), "AWS_CA_BUNDLE="+caFile)})
	lockStore(t, s)
	if err := s.Put(t.Context(), "index.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
}

// An https endpoint with a private CA: trusted through Config.CAFile or
// AWS_CA_BUNDLE, refused without.
func TestTLSEndpoint(t *testing.T) {
	ca := testca.New(t)
	caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	srv := s3test.StartTLS(t, certFile, keyFile)
	srv.CreateBucket(t, "tls")

	s := newStore(t, srv, "s3://tls/m/", s3store.Config{CAFile: caFile})
	lockStore(t, s)
	if err := s.Put(t.Context(), "a.zip", layout.Content{File: writeFile(t, []byte("zip over https"))}); err != nil {
		t.Fatal(err)
	}
	if data, err := s.ReadFile(t.Context(), "a.zip", 100); err != nil || string(data) != "zip over https" {
		t.Errorf("ReadFile = %q, %v", data, err)
	}
	newStore(t, srv, "s3://tls/m/", s3store.Config{Environ: append(srv.Environ(), "AWS_CA_BUNDLE="+caFile)})

	start := time.Now()
	_, err := s3store.New(t.Context(), "s3://tls/m/", s3store.Config{Environ: append(srv.Environ(), "SSL_CERT_FILE="+os.DevNull+"x")})
	if err == nil {
		t.Fatal("New with a missing SSL_CERT_FILE succeeded")
	}
	_, err = s3store.New(t.Context(), "s3://tls/m/", s3store.Config{Environ: srv.Environ()})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("New without the CA: %v; want a certificate error", err)
	}
	t.Logf("without the CA, after %s: %v", time.Since(start).Round(time.Millisecond), err)
}

// Credentials of a named profile in a shared credentials file, both named
// in Environ.
func TestSharedCredentialsProfile(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "profile")
	creds := filepath.Join(t.TempDir(), "credentials")
	data := fmt.Sprintf("[default]\naws_access_key_id = AKWRONG\naws_secret_access_key = wrong\n\n[mirror]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.AccessKey, srv.SecretKey)
	if err := os.WriteFile(creds, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"AWS_PROFILE=mirror", "AWS_SHARED_CREDENTIALS_FILE=" + creds, "AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_ENDPOINT_URL_S3=" + srv.Endpoint, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
	}
	s := newStore(t, srv, "s3://profile/", s3store.Config{Environ: env})
	lockStore(t, s)
	if err := s.Put(t.Context(), "index.json", layout.Content{Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	// An unknown profile is an error naming it.
	env[0] = "AWS_PROFILE=absent"
	if _, err := s3store.New(t.Context(), "s3://profile/", s3store.Config{Environ: env}); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("New with an unknown profile: %v", err)
	}
}

// The environment sets the Cache-Control of every command that writes a
// bucket; a configured value wins over it.
func TestCacheControlFromEnvironment(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "ccenv")
	env := append(srv.Environ(), s3store.EnvDocumentCacheControl+"=no-cache", s3store.EnvImmutableCacheControl+"=public, max-age=3600")
	s := newStore(t, srv, "s3://ccenv/", s3store.Config{Environ: env, ImmutableCacheControl: "public, max-age=7"})
	lockStore(t, s)
	for rel, want := range map[string]string{"a/x.zip": "public, max-age=7", "a/index.json": "no-cache"} {
		if err := s.Put(t.Context(), rel, layout.Content{Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if got := aws.ToString(headObject(t, srv, "ccenv", rel).CacheControl); got != want {
			t.Errorf("%s: Cache-Control %q, want %q", rel, got, want)
		}
	}
	bad := append(srv.Environ(), s3store.EnvDocumentCacheControl+"=no-cache\r\nX-Evil: 1")
	if _, err := s3store.New(t.Context(), "s3://ccenv/", s3store.Config{Environ: bad}); err == nil || !strings.Contains(err.Error(), s3store.EnvDocumentCacheControl) {
		t.Errorf("a Cache-Control with a line break: %v; want an error naming the variable", err)
	}
}

// With the SDK's trailing checksums on (AWS_REQUEST_CHECKSUM_CALCULATION=
// when_supported, over https), uploads still go up signed as the SDK
// streams them, with the caller's digest known or not.
func TestTrailingChecksumsOverTLS(t *testing.T) {
	ca := testca.New(t)
	caFile, certFile, keyFile := ca.WriteFiles(t, t.TempDir(), "127.0.0.1")
	srv := s3test.StartTLS(t, certFile, keyFile)
	srv.CreateBucket(t, "trailer")
	s := newStore(t, srv, "s3://trailer/", s3store.Config{
		CAFile:  caFile,
		Environ: append(srv.Environ(), "AWS_REQUEST_CHECKSUM_CALCULATION=when_supported"),
	})
	lockStore(t, s)
	data := []byte("an archive sent with a trailing checksum")
	for _, c := range []layout.Content{
		{File: writeFile(t, data), SHA256: sha256.Sum256(data)},
		{File: writeFile(t, data)},
		{Data: data},
	} {
		if err := s.Put(t.Context(), "x.zip", c); err != nil {
			t.Fatalf("Put with trailing checksums: %v", err)
		}
		if got, err := s.ReadFile(t.Context(), "x.zip", 1000); err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadFile = %q, %v; want %q", got, err, data)
		}
	}
}

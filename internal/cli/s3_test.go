package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// One build publishes into a directory and a bucket from one download:
// the bucket holds exactly the directory's published files, with the
// content types clients need, and verify and lock read it back.
func TestBuildIntoBucket(t *testing.T) {
	srv := s3test.Start(t)
	o, dir, bucket := bucketAndSite(t, srv)
	local := allPublishedFiles(t, filepath.Join(dir, "site")) // the change record too
	objects := bucketFiles(t, srv, "mirror", "site/")
	for key, obj := range objects {
		if strings.HasSuffix(key, ".json") && obj.contentType != "application/json" {
			t.Errorf("%s has Content-Type %q", key, obj.contentType)
		}
	}
	remote := contents(objects)
	diffSnapshots(t, local, remote)

	if code, stdout, stderr := o.run(t, dir, "verify", bucket); code != ExitOK || !strings.Contains(stdout, "0 problems") {
		t.Errorf("verify %s: exit %d\n%s%s", bucket, code, stdout, stderr)
	}
	module := t.TempDir()
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte("terraform {\n  required_providers {\n    foo = { source = \"hashicorp/foo\" }\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := o.run(t, module, "lock", "--mirror", bucket); code != ExitOK {
		t.Errorf("lock --mirror %s: exit %d\n%s%s", bucket, code, stdout, stderr)
	}
}

// s3Object is what a test compares of an object.
type s3Object struct {
	data        string
	contentType string
	etag        string
	modified    string
}

// bucketFiles returns every object under prefix in bucket, by key
// relative to the prefix, leaving out tfmirror's private .tfmirror/, read
// with the server's own SDK client.
func bucketFiles(t *testing.T, srv *s3test.Server, bucket, prefix string) map[string]s3Object {
	t.Helper()
	client := srv.Client(t)
	out := map[string]s3Object{}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(obj.Key), prefix)
			if strings.HasPrefix(key, ".tfmirror/") {
				continue
			}
			got, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: obj.Key})
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(got.Body)
			got.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[key] = s3Object{
				data: string(data), contentType: aws.ToString(got.ContentType),
				etag: aws.ToString(got.ETag), modified: aws.ToTime(got.LastModified).String(),
			}
		}
	}
	return out
}

// contents is the data of each object.
func contents(objects map[string]s3Object) map[string]string {
	out := make(map[string]string, len(objects))
	for k, o := range objects {
		out[k] = o.data
	}
	return out
}

// bucketAndSite builds the same mirror (foo 1.0.0 for two platforms) into
// DIR/site and into s3://mirror/site/ from one download, and returns the
// origin (with the server's environment), DIR and the bucket's URI.
func bucketAndSite(t *testing.T, srv *s3test.Server) (origin, string, string) {
	t.Helper()
	srv.CreateBucket(t, "mirror")
	o := newOrigin(t)
	o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/foo" { versions = "1.0.0" }
`+o.hostBlock("registry.opentofu.org"))
	o.environ = append(o.environ, srv.Environ()...)
	o.environ = append(o.environ, "XDG_CACHE_HOME="+t.TempDir())
	bucket := srv.URI("mirror", "site/")
	if code, stdout, stderr := o.run(t, dir, "build", "--out", "site", "--out", bucket); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	return o, dir, bucket
}

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
	client := srv.Client(t)
	local := publishedFiles(t, filepath.Join(dir, "site"))
	listed, err := client.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("mirror"), Prefix: aws.String("site/")})
	if err != nil {
		t.Fatal(err)
	}
	remote := map[string]string{}
	for _, obj := range listed.Contents {
		key := strings.TrimPrefix(aws.ToString(obj.Key), "site/")
		if strings.HasPrefix(key, ".tfmirror/") {
			continue
		}
		out, err := client.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("mirror"), Key: obj.Key})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(out.Body)
		out.Body.Close()
		remote[key] = string(data)
		if strings.HasSuffix(key, ".json") && aws.ToString(out.ContentType) != "application/json" {
			t.Errorf("%s has Content-Type %q", key, aws.ToString(out.ContentType))
		}
	}
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

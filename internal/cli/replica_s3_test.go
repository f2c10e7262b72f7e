package cli

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
)

// The registry replica is written through the same destination seam, so
// it lands in a bucket too.
func TestRegistryReplicaIntoBucket(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "mirror")
	o, dir := fooOrigin(t)
	o.environ = append(o.environ, srv.Environ()...)
	o.environ = append(o.environ, "XDG_CACHE_HOME="+t.TempDir())
	bucket := srv.URI("mirror", "site/")
	if code, stdout, stderr := o.run(t, dir, "build", "--out", bucket, "--registry-replica"); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, key := range []string{
		"site/replica/registry.opentofu.org/.well-known/terraform.json",
		"site/replica/registry.opentofu.org/v1/providers/hashicorp/foo/versions",
		"site/replica/registry.opentofu.org/v1/providers/hashicorp/foo/1.0.0/download/linux/amd64",
	} {
		if _, err := srv.Client(t).HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("mirror"), Key: aws.String(key)}); err != nil {
			t.Errorf("%s: %v", key, err)
		}
	}
	if t.Failed() {
		listed, _ := srv.Client(t).ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("mirror")})
		var keys []string
		for _, o := range listed.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		t.Log(strings.Join(keys, "\n"))
	}
}

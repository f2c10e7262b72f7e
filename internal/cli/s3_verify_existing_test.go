package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
)

// getObject reads bucket/key from the server directly, with its metadata.
func getObject(t *testing.T, srv *s3test.Server, bucket, key string) ([]byte, map[string]string) {
	t.Helper()
	out, err := srv.Client(t).GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data, out.Metadata
}

// overwriteObject overwrites bucket/key on the server directly, as a damaged
// disk or another writer would, keeping the metadata given.
func overwriteObject(t *testing.T, srv *s3test.Server, bucket, key string, data []byte, meta map[string]string) {
	t.Helper()
	_, err := srv.Client(t).PutObject(t.Context(), &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))), ContentType: aws.String("application/zip"), Metadata: meta,
	})
	if err != nil {
		t.Fatalf("put s3://%s/%s: %v", bucket, key, err)
	}
}

// An archive damaged in a bucket, its SHA-256 metadata kept (so the
// store still says it holds the right bytes), is found by verify (exit 3);
// a plain rebuild trusts the recorded size and keeps it (the documented
// cheap behaviour), and a rebuild with --verify-existing reads it again,
// fetches the package and replaces it: verify then passes. The same for
// another zip in its place (another size: a plain rebuild fetches it
// again, but its kept metadata must not make the publication think the
// bucket holds the right bytes).
func TestVerifyExistingReplacesDamagedArchiveInBucket(t *testing.T) {
	srv := s3test.Start(t)
	const archive = "site/registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_linux_amd64.zip"
	other := zipbuild.Bytes(t, zipbuild.File("terraform-provider-foo_v1.0.0", "not the release's binary"))
	for i, tc := range []struct {
		name   string
		damage func(good []byte) []byte
		// plainKeeps: a plain rebuild leaves the damage (the same size).
		plainKeeps bool
	}{
		{"flipped byte", func(good []byte) []byte {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0x40
			return bad
		}, true},
		{"another zip", func([]byte) []byte { return other }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := []string{"flipped", "otherzip"}[i]
			s := newThrottleSetup(t, srv, bucket, "1.0.0")
			uri := srv.URI(bucket, "site")
			if code, stdout, stderr := s.run(t, s.direct, "build", "--out", uri); code != ExitOK {
				t.Fatalf("first build: exit %d\n%s%s", code, stdout, stderr)
			}
			good, meta := getObject(t, srv, bucket, archive)
			sum := sha256.Sum256(good)
			if meta["sha256"] != hex.EncodeToString(sum[:]) {
				t.Fatalf("the archive's metadata is %v, want its sha256", meta)
			}
			overwriteObject(t, srv, bucket, archive, tc.damage(good), meta)

			verify := func(want int) {
				t.Helper()
				code, stdout, stderr := s.run(t, s.direct, "verify", uri)
				if code != want {
					t.Errorf("verify: exit %d, want %d\n%s%s", code, want, stdout, stderr)
				}
				if want == ExitVerification && !strings.Contains(stdout, "terraform-provider-foo_1.0.0_linux_amd64.zip") {
					t.Errorf("verify does not name the damaged archive:\n%s", stdout)
				}
			}
			verify(ExitVerification)

			code, stdout, stderr := s.run(t, s.direct, "build", "--out", uri)
			if code != ExitOK {
				t.Fatalf("plain rebuild: exit %d\n%s%s", code, stdout, stderr)
			}
			if now, _ := getObject(t, srv, bucket, archive); bytes.Equal(now, good) == tc.plainKeeps {
				t.Errorf("after a plain rebuild the archive is intact: %v, want %v", !tc.plainKeeps, !tc.plainKeeps)
			}
			if tc.plainKeeps {
				verify(ExitVerification)
			}

			code, stdout, stderr = s.run(t, s.direct, "build", "--out", uri, "--verify-existing")
			t.Logf("build --verify-existing: exit %d\n%s%s", code, stdout, stderr)
			if code != ExitOK {
				t.Fatalf("build --verify-existing: exit %d", code)
			}
			now, nowMeta := getObject(t, srv, bucket, archive)
			if !bytes.Equal(now, good) {
				t.Errorf("build --verify-existing left the damaged archive in place (%d bytes, want the release's %d)", len(now), len(good))
			}
			if nowMeta["sha256"] != meta["sha256"] {
				t.Errorf("the replaced archive's metadata is %v, want %v", nowMeta, meta)
			}
			verify(ExitOK)
		})
	}
}

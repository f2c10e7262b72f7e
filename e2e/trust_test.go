package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/pgptest"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// trustTarget is a destination the trust tests build into: what to pass
// to --out, the environment that reaches it, whether it shows a version
// of hashicorp/foo to clients, and a snapshot of everything it holds
// that changes with any write.
type trustTarget struct {
	out      string
	env      []string
	shows    func(t *testing.T, version string) bool
	snapshot func(t *testing.T) string
}

// TestKeyChangeAndReReleaseInABucket runs the real binary into a bucket
// (versitygw): a release signed by another key than the one the bucket's
// mirror holds is refused under key_change = "refuse" until the new key
// is accepted; a release re-published at the origin with other bytes is
// found by --recheck, and the bucket keeps every object as it was.
func TestKeyChangeAndReReleaseInABucket(t *testing.T) {
	ca := testca.New(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	testKeyChangeAndReRelease(t, ca, trustTarget{
		out: srv.URI(s3Bucket, s3Prefix),
		env: srv.Environ(),
		shows: func(t *testing.T, version string) bool {
			_, ok := listBucket(t, srv, s3Bucket, s3Prefix)["registry.opentofu.org/hashicorp/foo/"+version+".json"]
			return ok
		},
		snapshot: func(t *testing.T) string {
			objects := listBucket(t, srv, s3Bucket, s3Prefix)
			var b strings.Builder
			for _, key := range slices.Sorted(maps.Keys(objects)) {
				fmt.Fprintf(&b, "%s %s\n", key, objects[key].ETag)
			}
			return b.String()
		},
	})
}

// TestKeyChangeAndReReleaseInARegistry is the same into an OCI registry
// (docker-registry), whose provenance artifacts keep each release's
// signer and SHA256SUMS: the key history and --recheck read them.
func TestKeyChangeAndReReleaseInARegistry(t *testing.T) {
	ca := testca.New(t)
	oci := registrytest.StartWith(t, registrytest.Options{CA: ca})
	testKeyChangeAndReRelease(t, ca, trustTarget{
		out: "oci://" + oci.Host + "/mirror/${hostname}/${namespace}/${type}",
		env: []string{"DOCKER_CONFIG=" + oci.DockerConfigDir},
		shows: func(t *testing.T, version string) bool {
			return slices.ContainsFunc(oci.ManifestPuts(t), func(uri string) bool { return strings.HasSuffix(uri, "/manifests/"+version) })
		},
		snapshot: func(t *testing.T) string {
			return fmt.Sprintf("%d blob uploads, manifests %q", oci.BlobUploads(t), oci.ManifestPuts(t))
		},
	})
}

func testKeyChangeAndReRelease(t *testing.T, ca *testca.CA, target trustTarget) {
	reg := fakeregistry.New(t, ca)
	a, b := pgptest.New(t, "A"), pgptest.New(t, "B")
	reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
	reg.Add("hashicorp", "foo", "2.0.0", "linux_amd64")
	sign := func(v string, k pgptest.Key) {
		reg.SignWith("hashicorp", "foo", v, func(sums []byte) []byte { return k.Sign(t, sums) }, k.Armored)
	}
	sign("1.0.0", a)
	sign("2.0.0", b)
	work := t.TempDir()
	env := append(caFileEnv(t, ca), target.env...)
	build := func(versions, trust string, args ...string) (string, int) {
		t.Helper()
		writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = %q }
trust "hashicorp/foo" {
  key_change = "refuse"
  %s
}
host "registry.opentofu.org" {
  services = { "providers.v1" = %q }
}
`, versions, trust, reg.ServicesURL))
		stdout, stderr, code := runTfmirror(t, work, env, append([]string{"build", "--out", target.out}, args...)...)
		return stdout + stderr, code
	}

	if out, code := build("1.0.0", "", "--json", "--verbose"); code != 0 || !strings.Contains(out, `"event":"signing_key"`) || !strings.Contains(out, `"status":"first"`) {
		t.Fatalf("first build: exit %d, want 0 and a signing_key event saying 1.0.0 is the first\n%s", code, out)
	}
	out, code := build(">= 1.0.0", "")
	if code != 3 || !strings.Contains(out, a.Fingerprint) || !strings.Contains(out, b.Fingerprint) {
		t.Fatalf("2.0.0 signed by another key: exit %d, want 3 naming both fingerprints\n%s", code, out)
	}
	if target.shows(t, "2.0.0") {
		t.Fatal("2.0.0, refused, is published")
	}
	if out, code := build(">= 1.0.0", `accept_new_keys = ["`+b.ID+`"]`); code != 0 || !strings.Contains(out, "accepts the new key") {
		t.Fatalf("2.0.0 with its key accepted: exit %d, want 0\n%s", code, out)
	}
	if !target.shows(t, "2.0.0") {
		t.Fatal("2.0.0, accepted, is not published")
	}
	before := target.snapshot(t)

	// 1.0.0 is published again at the origin with other bytes, signed by
	// the same key.
	reg.AddWithOptions("hashicorp", "foo", "1.0.0", fakeregistry.Options{DirEntries: true}, "linux_amd64")
	sign("1.0.0", a)
	archive := fakeregistry.ArchivePath("hashicorp", "foo", "1.0.0", "linux_amd64")
	served := reg.RequestCount(archive)
	out, code = build(">= 1.0.0", `accept_new_keys = ["`+b.ID+`"]`, "--recheck")
	if code != 3 || !strings.Contains(out, "hashicorp/foo 1.0.0 linux_amd64") || !strings.Contains(out, "re-released at the origin") {
		t.Fatalf("--recheck after a re-release: exit %d, want 3 naming 1.0.0 linux_amd64\n%s", code, out)
	}
	if n := reg.RequestCount(archive) - served; n != 0 {
		t.Errorf("--recheck downloaded the re-released archive %d times", n)
	}
	if after := target.snapshot(t); after != before {
		t.Errorf("--recheck changed what the destination holds:\nbefore %s\nafter  %s", before, after)
	}
}

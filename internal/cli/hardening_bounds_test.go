package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/testutil/hostileoci"
	"github.com/tfmirror/tfmirror/internal/testutil/hostiles3"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// A command against a hostile store or registry must end within this
// (the bounds below are test-sized); the code this guards against ran
// until it was killed.
const boundedWithin = 60 * time.Second

// moduleDir is a configuration requiring hashicorp/foo, for lock.
func moduleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("terraform {\n  required_providers {\n    foo = { source = \"hashicorp/foo\" }\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hostileBucket builds hashicorp/foo 1.0.0 into s3://mirror/site/ of a
// real store and returns the origin set to reach the store only through
// a hostile proxy, the manifest's directory (whose manifest gets the
// settings block given) and the bucket's URI.
func hostileBucket(t *testing.T, settingsBlock string) (origin, string, string, *hostiles3.Proxy) {
	t.Helper()
	srv := s3test.Start(t)
	o, dir, bucket := bucketAndSite(t, srv)
	manifest, err := os.ReadFile(filepath.Join(dir, "mirror.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	writeManifest(t, dir, string(manifest)+settingsBlock)
	proxy := hostiles3.Start(t, testca.New(t), srv.Endpoint)
	o.environ = proxy.Environ(o.environ)
	return o, dir, bucket, proxy
}

// wantBounded fails unless a command run within boundedWithin failed
// (exit code not 0) with an output naming every one of want.
func wantBounded(t *testing.T, what string, code int, out string, took time.Duration, want ...string) {
	t.Helper()
	t.Logf("%s: exit %d after %s:\n%s", what, code, took.Round(time.Millisecond), out)
	if code == ExitOK || took >= boundedWithin {
		t.Errorf("%s: exit %d after %s, want a failure well within %s\n%s", what, code, took.Round(time.Millisecond), boundedWithin, out)
		return
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not say %q:\n%s", what, w, out)
		}
	}
}

// A bucket whose listing never ends, with pages that always have a next
// one or with a page whose body never ends, stops every command that
// lists it at the bound, with an error naming the bucket and the bound:
// a rebuild, verify, replica, bundle create and prune.
func TestEndlessBucketListing(t *testing.T) {
	for _, tt := range []struct {
		name     string
		fault    hostiles3.Fault
		settings string
		want     string
		most     int64 // listing requests a command may make
	}{
		{"pages", hostiles3.EndlessPages, "settings {\n  max_list_pages = 20\n}\n", "more than 20 pages", 5 * 20},
		{"body", hostiles3.EndlessListing, "", "the answer to ListObjectsV2 is longer than 16777216 bytes", 5 * 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, dir, bucket, proxy := hostileBucket(t, tt.settings)
			proxy.Set(tt.fault, nil)
			work := t.TempDir()
			for _, args := range [][]string{
				{"build", "--out", bucket},
				{"verify", "--config", filepath.Join(dir, "mirror.hcl"), bucket},
				{"replica", "--config", filepath.Join(dir, "mirror.hcl"), bucket},
				{"bundle", "create", "--config", filepath.Join(dir, "mirror.hcl"), bucket, "--out", filepath.Join(work, "b.tar.gz")},
				{"prune", "--out", bucket, "--grace", "0"},
			} {
				before := proxy.Listings()
				code, out, took := o.runWithin(t, dir, boundedWithin, args...)
				wantBounded(t, strings.Join(args[:1], " "), code, out, took, "s3://mirror/site/", tt.want)
				if n := proxy.Listings() - before; n > tt.most {
					t.Errorf("%s: %d listing requests", args[0], n)
				}
			}
			if _, err := os.Stat(filepath.Join(work, "b.tar.gz")); err == nil {
				t.Error("bundle create wrote a bundle")
			}
		})
	}
}

// An OCI registry whose tag list always has a next page stops build
// (from the registry), verify and lock at the bound, with an error naming
// the repository and the bound.
func TestEndlessTagList(t *testing.T) {
	f := newOCIFixture(t)
	env := []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir}
	if code, stdout, stderr := f.run(t, f.dir, env, "build", "--out", "oci://"+f.template()); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
	}
	proxy := hostileoci.Start(t, f.srv.CA, f.srv.URL())
	proxy.Set(hostileoci.EndlessTags)
	template := "oci://" + proxy.Host + "/mirror/${hostname}/${namespace}/${type}"
	dir := t.TempDir()
	writeManifest(t, dir, `platforms = ["linux_amd64"]
provider "hashicorp/foo" { versions = "1.0.0" }
settings {
  max_list_pages = 5
}
`)
	o := f.o
	o.environ = append(append([]string(nil), f.o.environ...),
		"TFMIRROR_OCI_USERNAME="+f.srv.Username, "TFMIRROR_OCI_PASSWORD="+f.srv.Password)
	module := moduleDir(t)
	for _, args := range [][]string{
		{"build", "--from", template, "--out", filepath.Join(t.TempDir(), "site")},
		{"verify", "--config", filepath.Join(dir, "mirror.hcl"), template},
		{"lock", "--config", filepath.Join(dir, "mirror.hcl"), "--mirror", template, module},
	} {
		before := proxy.Pages()
		code, out, took := o.runWithin(t, dir, boundedWithin, args...)
		wantBounded(t, args[0], code, out, took, proxy.Host+"/mirror/registry.opentofu.org/hashicorp/foo", "the tag list goes on past 5 pages")
		if n := proxy.Pages() - before; n > 5*3 {
			t.Errorf("%s: %d tag list pages", args[0], n)
		}
	}
}

// A bucket, an OCI registry and an upstream network mirror that stop
// sending in the middle of a file each fail the command within the stall
// timeout (test-sized: 1s), naming what stalled.
func TestStallMidTransfer(t *testing.T) {
	const stall = "settings {\n  stall_timeout = \"1s\"\n  retries = 0\n}\n"
	t.Run("bucket", func(t *testing.T) {
		o, dir, bucket, proxy := hostileBucket(t, stall)
		proxy.Set(hostiles3.StallObjects, nil)
		for _, args := range [][]string{
			{"build", "--out", bucket},
			{"verify", "--config", filepath.Join(dir, "mirror.hcl"), bucket},
		} {
			code, out, took := o.runWithin(t, dir, boundedWithin, args...)
			wantBounded(t, args[0], code, out, took, "s3://mirror/site/", "no data for 1s")
			if took > 20*time.Second {
				t.Errorf("%s gave up after %s", args[0], took)
			}
		}
	})
	t.Run("registry", func(t *testing.T) {
		f := newOCIFixture(t)
		env := []string{"DOCKER_CONFIG=" + f.srv.DockerConfigDir}
		if code, stdout, stderr := f.run(t, f.dir, env, "build", "--out", "oci://"+f.template()); code != ExitOK {
			t.Fatalf("build: exit %d\n%s%s", code, stdout, stderr)
		}
		proxy := hostileoci.Start(t, f.srv.CA, f.srv.URL())
		proxy.Set(hostileoci.StallBlobs)
		template := "oci://" + proxy.Host + "/mirror/${hostname}/${namespace}/${type}"
		dir := t.TempDir()
		writeManifest(t, dir, "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/foo\" { versions = \"1.0.0\" }\n"+stall)
		o := f.o
		o.environ = append(append([]string(nil), f.o.environ...),
			"TFMIRROR_OCI_USERNAME="+f.srv.Username, "TFMIRROR_OCI_PASSWORD="+f.srv.Password)
		for _, args := range [][]string{
			{"build", "--from", template, "--out", filepath.Join(t.TempDir(), "site")},
			{"verify", "--config", filepath.Join(dir, "mirror.hcl"), template},
		} {
			code, out, took := o.runWithin(t, dir, boundedWithin, args...)
			wantBounded(t, args[0], code, out, took, proxy.Host+"/mirror/registry.opentofu.org/hashicorp/foo", "no data for 1s")
			if took > 20*time.Second {
				t.Errorf("%s gave up after %s", args[0], took)
			}
		}
	})
	t.Run("upstream mirror", func(t *testing.T) {
		o := newOrigin(t)
		o.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64")
		dir := t.TempDir()
		writeManifest(t, dir, "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/foo\" { versions = \"1.0.0\" }\n"+o.hostBlock("registry.opentofu.org"))
		mustRun(t, o, dir, "build", "--out", "site")
		ca := testca.New(t)
		files := http.FileServer(http.Dir(filepath.Join(dir, "site")))
		done := make(chan struct{})
		hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, ".zip") {
				files.ServeHTTP(w, r)
				return
			}
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write(make([]byte, 100))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-done:
			}
		}))
		hs.TLS = ca.TLSConfig(t)
		hs.StartTLS()
		t.Cleanup(func() { close(done); hs.CloseClientConnections(); hs.Close() })
		caFile, _, _ := ca.WriteFiles(t, t.TempDir())
		writeManifest(t, dir, "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/foo\" { versions = \"1.0.0\" }\n"+stall)
		o.environ = []string{"SSL_CERT_FILE=" + caFile}
		code, out, took := o.runWithin(t, dir, boundedWithin, "build", "--from", hs.URL+"/", "--out", "copy")
		wantBounded(t, "build", code, out, took, hs.URL, "no data for 1s")
		if took > 20*time.Second {
			t.Errorf("build gave up after %s", took)
		}
	})
}

// bundle create from a bucket whose archive is far larger than its
// listing says stops copying at the listed size, refuses the mirror and
// writes no bundle.
func TestBundleCreateObjectLargerThanListed(t *testing.T) {
	o, dir, bucket, proxy := hostileBucket(t, "")
	proxy.Set(hostiles3.LargerObjects, func(key string) bool { return strings.HasSuffix(key, ".zip") })
	work := t.TempDir()
	code, out, took := o.runWithin(t, dir, boundedWithin, "bundle", "create", bucket, "--out", filepath.Join(work, "b.tar.gz"))
	wantBounded(t, "bundle create", code, out, took, "s3://mirror/site/registry.opentofu.org/hashicorp/foo/terraform-provider-foo_1.0.0_", "the size the store's listing gives it")
	if sent := proxy.Sent(); sent > 32<<20 {
		t.Errorf("the bucket sent %d MiB before bundle create stopped reading", sent>>20)
	}
	if _, err := os.Stat(filepath.Join(work, "b.tar.gz")); err == nil {
		t.Error("bundle create wrote a bundle")
	}
}

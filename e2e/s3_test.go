package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/pagetest"
	"github.com/tfmirror/tfmirror/internal/testutil/s3test"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// The bucket tests publish into a real S3-compatible server (versitygw,
// see internal/testutil/s3test) with `tfmirror build --out s3://...`.

const (
	s3Bucket = "mirror"
	s3Prefix = "site/"
)

// bucketPackages: two providers, the host platform and another one.
var bucketPackages = []pkgVersion{
	{host: "registry.opentofu.org", ns: "hashicorp", typ: "foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
	{host: "registry.test", ns: "acme", typ: "baz", version: "2.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}},
}

func bucketManifest(servicesURL string) string {
	return fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/foo" {
  versions = "1.0.0"
}

provider "registry.test/acme/baz" {
  versions = "~> 2.0"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %[1]q }
}

host "registry.test" {
  services = { "providers.v1" = %[1]q }
}
`, servicesURL)
}

// newBucketFixture starts a fake registry publishing bucketPackages and
// writes mirror.hcl for it; nothing is built yet (f.site is empty: the
// mirror lives in a bucket).
func newBucketFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ca: testca.New(t), pkgs: bucketPackages}
	f.reg = fakeregistry.New(t, f.ca)
	for _, p := range f.pkgs {
		f.reg.AddWithOptions(p.ns, p.typ, p.version, fakeregistry.Options{DirEntries: p.dirEntries}, p.platforms...)
	}
	f.env = caFileEnv(t, f.ca)
	f.work = t.TempDir()
	writeFile(t, filepath.Join(f.work, "mirror.hcl"), bucketManifest(f.reg.ServicesURL))
	return f
}

// buildIntoBucket runs `tfmirror build --config mirror.hcl --out uri` with
// env added and requires success.
func buildIntoBucket(t *testing.T, f *fixture, env []string, uri string) {
	t.Helper()
	stdout, stderr, code := runTfmirror(t, f.work, append(slices.Clone(f.env), env...), "build", "--config", "mirror.hcl", "--out", uri)
	if code != 0 {
		t.Fatalf("tfmirror build --out %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", uri, code, stdout, stderr)
	}
}

// bucketObject is what a listing says of an object.
type bucketObject struct {
	ETag         string
	Size         int64
	LastModified time.Time
}

// listBucket lists every object under prefix in bucket, keyed by its key
// relative to prefix, straight from the server (not through a proxy).
func listBucket(t testing.TB, srv *s3test.Server, bucket, prefix string) map[string]bucketObject {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := srv.Client(t)
	out := map[string]bucketObject{}
	var token *string
	for {
		page, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), ContinuationToken: token})
		if err != nil {
			t.Fatalf("list %s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			out[strings.TrimPrefix(aws.ToString(o.Key), prefix)] = bucketObject{
				ETag: aws.ToString(o.ETag), Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified),
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			return out
		}
		token = page.NextContinuationToken
	}
}

// getObject reads an object straight from the server.
func getObject(t testing.TB, srv *s3test.Server, bucket, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := srv.Client(t).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// backendFiles describes the files of versitygw's POSIX backend below
// bucket/prefix (except .tfmirror/) by inode, modification time in
// nanoseconds and size, keyed by relative path.
func backendFiles(t testing.TB, srv *s3test.Server, bucket, prefix string) map[string]string {
	t.Helper()
	root := filepath.Join(srv.Dir, bucket, filepath.FromSlash(strings.Trim(prefix, "/")))
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".tfmirror" {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var ino uint64
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		out[rel] = fmt.Sprintf("inode %d, mtime %d, %d bytes", ino, info.ModTime().UnixNano(), info.Size())
		return nil
	})
	if err != nil {
		t.Fatalf("reading the backend of %s/%s: %v", bucket, prefix, err)
	}
	if len(out) == 0 {
		t.Fatalf("no files in the backend directory %s", root)
	}
	return out
}

func isPrivateKey(rel string) bool { return strings.HasPrefix(rel, ".tfmirror/") }

// servedVersionDoc fetches <version>.json of p through base (what clients
// see the mirror list).
func servedVersionDoc(t testing.TB, ca *testca.CA, base string, p pkgVersion) versionDoc {
	t.Helper()
	url := base + p.dir() + "/" + p.version + ".json"
	resp, err := ca.Client().Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s %v\n%s", url, resp.Status, err, raw)
	}
	var doc versionDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return doc
}

// ---------------------------------------------------------------------------

// TestTofuInstallsFromBucket publishes a mirror into a bucket and installs
// from it with real OpenTofu through nginx over TLS, proxying to the
// bucket's prefix anonymously as a CDN would: the CLI configuration holds
// only a network_mirror, so the origin registry is never asked.
func TestTofuInstallsFromBucket(t *testing.T) {
	plat := requireMirroredHostPlatform(t)
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	grantPublicRead(t, srv, s3Bucket, s3Prefix)
	f := newBucketFixture(t)
	buildIntoBucket(t, f, srv.Environ(), srv.URI(s3Bucket, s3Prefix))

	base := startBucketNginx(t, srv, s3Bucket, s3Prefix, f.ca)
	foo, baz := f.pkgs[0], f.pkgs[1]
	// The bucket's stored Content-Type reaches the client through the proxy.
	checkServed(t, f.ca, base+foo.dir()+"/index.json", "application/json", nil)
	checkServed(t, f.ca, base+foo.dir()+"/"+foo.version+".json", "application/json", nil)
	checkServed(t, f.ca, base+baz.dir()+"/index.json", "application/json", nil)
	checkServed(t, f.ca, base+foo.dir()+"/"+foo.zip(plat), "application/zip", f.archive(t, foo, plat))
	checkServed(t, f.ca, base+baz.dir()+"/"+baz.zip(plat), "application/zip", f.archive(t, baz, plat))

	// What the mirror lists, as served.
	listed := map[string]versionDoc{}
	for _, p := range f.pkgs {
		listed[p.addr()] = servedVersionDoc(t, f.ca, base, p)
	}
	want := map[string]pkgVersion{foo.addr(): foo, baz.addr(): baz}
	mainTF := `terraform {
  required_providers {
    foo = {
      source  = "hashicorp/foo"
      version = "1.0.0"
    }
    baz = {
      source = "registry.test/acme/baz"
    }
  }
}
`
	// checkLock requires that the lock file in wd holds, for every
	// provider, exactly the hashes the mirror lists that tofu records: with
	// trust_all_hashes, those of every platform for providers of
	// registry.opentofu.org; otherwise, and for providers of other hosts
	// (whose mirror hashes tofu trusts only when GPG-signed, see
	// getproviders.ShouldEnforceGPGValidationForProvider), those of the
	// installed platform, which it verified itself.
	checkLock := func(t *testing.T, wd string, trustAll bool) {
		t.Helper()
		for addr, hashes := range parseLockFile(t, filepath.Join(wd, ".terraform.lock.hcl")) {
			doc := listed[addr]
			var wantHashes []string
			if trustAll && strings.HasPrefix(addr, "registry.opentofu.org/") {
				for _, a := range doc.Archives {
					wantHashes = append(wantHashes, a.Hashes...)
				}
			} else {
				wantHashes = slices.Clone(doc.Archives[plat].Hashes)
			}
			slices.Sort(wantHashes)
			wantHashes = slices.Compact(wantHashes)
			if got := slices.Sorted(slices.Values(hashes)); !slices.Equal(got, wantHashes) {
				t.Errorf("lock file: %s hashes\n%q\nwant exactly what the mirror lists (trust_all_hashes %v)\n%q", addr, got, trustAll, wantHashes)
			}
			h1 := dirHashOfArchive(t, f.archive(t, want[addr], plat))
			if !slices.Contains(doc.Archives[plat].Hashes, h1) {
				t.Errorf("the mirror's %s %s hashes %q lack the installed package's %s", addr, plat, doc.Archives[plat].Hashes, h1)
			}
		}
	}

	t.Run("tofu 1.12 trust_all_hashes", func(t *testing.T) {
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), mainTF)
		cli := fmt.Sprintf("provider_installation {\n  network_mirror {\n    url              = %q\n    trust_all_hashes = true\n  }\n}\n", base)
		initThroughMirror(t, f, tofuBin(t), wd, cli, plat, want)
		checkLock(t, wd, true)
	})
	plain := func(t *testing.T, bin string) {
		wd := t.TempDir()
		writeFile(t, filepath.Join(wd, "main.tf"), mainTF)
		initThroughMirror(t, f, bin, wd, mirrorOnlyCLI(base), plat, want)
		checkLock(t, wd, false)
	}
	t.Run("tofu 1.12", func(t *testing.T) { plain(t, tofuBin(t)) })
	t.Run("tofu 1.10", func(t *testing.T) { plain(t, oldTofuBin(t)) })
}

// TestNoOpBuildIntoBucketMakesNoWrites counts, in a reverse proxy between
// tfmirror and the S3 server, the requests of a build into a bucket and of
// the same build again: the second finds everything published and must
// make no write request at all (no lock or lease object either), and
// download no archive from the origin.
func TestNoOpBuildIntoBucketMakesNoWrites(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	proxy := startS3Proxy(t, srv.Endpoint)
	env := s3Environ(srv, proxy.URL)
	f := newBucketFixture(t)
	uri := srv.URI(s3Bucket, s3Prefix)
	keyPath := "/" + s3Bucket + "/" + s3Prefix // path-style: /BUCKET/KEY

	// --- the first build publishes everything, through the proxy
	buildIntoBucket(t, f, env, uri)
	first := proxy.Requests()
	objects := listBucket(t, srv, s3Bucket, s3Prefix)
	published := 0
	for rel := range objects {
		if !isPrivateKey(rel) {
			published++
		}
	}
	puts := map[string]bool{}
	for _, r := range first {
		method, target, _ := strings.Cut(r, " ")
		path, _, _ := strings.Cut(target, "?")
		if method == "PUT" && strings.HasPrefix(path, keyPath) && !strings.HasPrefix(path, keyPath+".tfmirror/") {
			puts[strings.TrimPrefix(path, keyPath)] = true
		}
	}
	t.Logf("first build: %d requests to the S3 server, PUTs of %d published objects; the bucket holds %d published objects",
		len(first), len(puts), published)
	if published == 0 || len(puts) != published {
		t.Fatalf("first build: PUT %d distinct published keys, the bucket holds %d published objects (%q)\nrequests:\n%s",
			len(puts), published, slices.Sorted(func(yield func(string) bool) {
				for k := range objects {
					if !yield(k) {
						return
					}
				}
			}), strings.Join(first, "\n"))
	}

	// --- the same build again
	regBefore := len(f.reg.Requests())
	backendBefore := backendFiles(t, srv, s3Bucket, s3Prefix)
	buildIntoBucket(t, f, env, uri)
	second := proxy.Requests()[len(first):]
	t.Logf("no-op build: %d requests to the S3 server:\n  %s", len(second), strings.Join(second, "\n  "))

	var writes []string
	for _, r := range second {
		if isS3Write(r) {
			writes = append(writes, r)
		}
	}
	if len(writes) > 0 {
		t.Errorf("the no-op build made %d write requests; want none:\n  %s", len(writes), strings.Join(writes, "\n  "))
	}

	// Independently of the proxy: every object is as the first build left
	// it, in the listing and in versitygw's POSIX backend (a rewrite, even
	// of the same bytes within the same second, gives the file a new inode
	// or modification time).
	after := listBucket(t, srv, s3Bucket, s3Prefix)
	for rel, o := range objects {
		if isPrivateKey(rel) {
			continue
		}
		if a, ok := after[rel]; !ok {
			t.Errorf("%s: gone after the no-op build", rel)
		} else if a != o {
			t.Errorf("%s: changed by the no-op build: %+v, was %+v", rel, a, o)
		}
	}
	for rel := range after {
		if _, ok := objects[rel]; !ok {
			t.Errorf("%s: added by the no-op build", rel)
		}
	}
	backendAfter := backendFiles(t, srv, s3Bucket, s3Prefix)
	for rel, st := range backendBefore {
		if st != backendAfter[rel] {
			t.Errorf("%s: rewritten in the server's backend by the no-op build (%s, was %s)", rel, backendAfter[rel], st)
		}
	}

	// No archive from the origin.
	regReqs := f.reg.Requests()[regBefore:]
	t.Logf("no-op build: %d requests to the origin registry:\n  %s", len(regReqs), strings.Join(regReqs, "\n  "))
	for _, r := range regReqs {
		if strings.Contains(r, "/releases/") && strings.HasSuffix(r, ".zip") {
			t.Errorf("the no-op build downloaded an archive from the origin: %s", r)
		}
	}
}

// TestBucketSurvivesSIGKILL kills builds into a bucket after a few amounts
// of archive bytes served by the origin. After each kill, `tfmirror verify`
// of the prefix must pass (every listed version resolves), every published
// object must be one an uninterrupted build publishes (JSON documents
// listing only what its documents list); the dead build's lock keeps the
// next build out until it is removed; then the next build completes and
// gives exactly the objects of an uninterrupted build.
func TestBucketSurvivesSIGKILL(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, s3Bucket)
	c := newCrashRegistry(t)
	c.env = append(c.env, srv.Environ()...)

	// The uninterrupted build, into its own prefix.
	const finalPrefix = "final/"
	c.build(t, "full.hcl", srv.URI(s3Bucket, finalPrefix))
	if res := verifySite(t, c.work, c.env, srv.URI(s3Bucket, finalPrefix)); res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
		t.Fatalf("uninterrupted build: verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
	}
	final := listBucket(t, srv, s3Bucket, finalPrefix)
	finalDocs := map[string]map[string]string{}
	for rel := range final {
		if isPrivateKey(rel) {
			t.Fatalf("the uninterrupted build left %s behind", rel)
		}
		if isMetadataDoc(rel) && !isChangeFile(rel) {
			entries, err := docEntries(rel, getObject(t, srv, s3Bucket, finalPrefix+rel))
			if err != nil {
				t.Fatal(err)
			}
			finalDocs[rel] = entries
		}
	}
	totalBytes := int64(18 * crashArchiveSize) // from an empty prefix, every archive

	for i, frac := range []float64{0.1, 0.5, 0.95} {
		n := int64(frac * float64(totalBytes))
		t.Run(fmt.Sprintf("after_%d_bytes", n), func(t *testing.T) {
			prefix := fmt.Sprintf("kill%d/", i)
			uri := srv.URI(s3Bucket, prefix)
			start := c.killAfterBytes(t, uri, n)

			// The prefix as the kill left it.
			res := verifySite(t, c.work, c.env, uri)
			now := listBucket(t, srv, s3Bucket, prefix)
			private := 0
			for rel, o := range now {
				if isPrivateKey(rel) {
					private++
					continue
				}
				want, ok := final[rel]
				switch {
				case isChangeFile(rel): // the killed build's record, if it got that far
				case rel == "index.html":
					samePage(t, srv, finalPrefix, prefix)
				case !ok:
					t.Errorf("%s: published, but an uninterrupted build has no such object", rel)
				case isMetadataDoc(rel):
					is, err := docEntries(rel, getObject(t, srv, s3Bucket, prefix+rel))
					if err != nil {
						t.Error(err)
					} else if extra := entriesWithin(is, finalDocs[rel]); len(extra) > 0 {
						t.Errorf("%s lists what an uninterrupted build does not: %s", rel, strings.Join(extra, ", "))
					}
				case o.ETag != want.ETag || o.Size != want.Size:
					t.Errorf("%s: published with content (etag %s, %d bytes) other than an uninterrupted build's (etag %s, %d bytes)", rel, o.ETag, o.Size, want.ETag, want.Size)
				}
			}
			t.Logf("after the kill (%d archive bytes served): %d providers, %d versions, %d archives listed; %d objects, %d under .tfmirror/",
				c.served.Load()-start, res.Providers, res.Versions, res.Archives, len(now), private)

			// The dead build's writer lease does not keep the next build
			// out: publishers share the bucket.
			c.reg.SetArchiveDelay(0)
			c.build(t, "full.hcl", uri, "--lock-timeout", "0")

			res = verifySite(t, c.work, c.env, uri)
			if res.Providers != 3 || res.Versions != 6 || res.Archives != 18 {
				t.Fatalf("rerun: verify counted %d providers, %d versions, %d archives; want 3, 6, 18", res.Providers, res.Versions, res.Archives)
			}
			rerun := listBucket(t, srv, s3Bucket, prefix)
			for rel, o := range rerun {
				switch {
				case isPrivateKey(rel):
					continue // the killed build's writer lease, stale in a lease
				case isChangeFile(rel):
					continue // each build's own record
				case rel == "index.html":
					samePage(t, srv, finalPrefix, prefix)
					continue
				}
				if want, ok := final[rel]; !ok {
					t.Errorf("after the rerun: %s is not an object of an uninterrupted build", rel)
				} else if o.ETag != want.ETag || o.Size != want.Size {
					t.Errorf("after the rerun: %s differs from an uninterrupted build's", rel)
				}
			}
			for rel := range final {
				if _, ok := rerun[rel]; !ok && !isChangeFile(rel) {
					t.Errorf("after the rerun: %s is missing", rel)
				}
			}
		})
	}
}

// samePage requires the catalog pages under two prefixes to be the same
// but for their "Recent changes", which show each build's own records.
func samePage(t *testing.T, srv *s3test.Server, wantPrefix, gotPrefix string) {
	t.Helper()
	want, got := getObject(t, srv, s3Bucket, wantPrefix+"index.html"), getObject(t, srv, s3Bucket, gotPrefix+"index.html")
	if pagetest.WithoutChanges(string(want)) != pagetest.WithoutChanges(string(got)) {
		t.Errorf("%sindex.html differs from an uninterrupted build's", gotPrefix)
	}
}

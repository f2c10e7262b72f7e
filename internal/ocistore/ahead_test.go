package ocistore_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
)

// blobUploads counts the blob uploads completed in the registry's log
// from the request at index from on, and fails the test on any manifest
// write.
func blobUploads(t *testing.T, srv *registrytest.Server, from int) int {
	t.Helper()
	n := 0
	for _, r := range srv.Requests(t)[from:] {
		switch {
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/blobs/uploads/"):
			n++
		case r.Method == http.MethodPut:
			t.Errorf("a write other than a blob's: %s %s", r.Method, r.URI)
		}
	}
	return n
}

// An archive pushed ahead is a blob of the provider's repository that no
// manifest names: the version has no tag until the release's Push, which
// then finds the blob and does not upload it again.
func TestPushArchiveAhead(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	// The registry does not log the lookups it answers 404: a proxy
	// counts those of the version's tag.
	var mu sync.Mutex
	tagLookups := 0
	lookups := func() int { mu.Lock(); defer mu.Unlock(); return tagLookups }
	proxy := startProxy(t, srv, func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/manifests/1.0.0") {
			mu.Lock()
			tagLookups++
			mu.Unlock()
		}
		return false
	})
	s := openStore(t, "oci://"+proxy.host+"/tf/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + proxy.dockerConfig})
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	linux := rel.Archives[0]

	before := len(srv.Requests(t))
	if err := s.PushArchiveAhead(ctx, foo, rel.Version, linux); err != nil {
		t.Fatal(err)
	}
	if n := blobUploads(t, srv, before); n != 1 {
		t.Errorf("pushing one archive ahead uploaded %d blobs", n)
	}
	if _, found, err := s.Release(ctx, foo, rel.Version); err != nil || found {
		t.Errorf("after an archive pushed ahead the version's tag is found %v (%v); want no tag", found, err)
	}
	got, _ := rawGet(t, srv, "/v2/tf/registry.opentofu.org/hashicorp/foo/blobs/sha256:"+sha256Hex(rel.zips["linux_amd64"]), "")
	if !bytes.Equal(got, rel.zips["linux_amd64"]) {
		t.Errorf("the blob pushed ahead holds %d bytes, not the archive's %d", len(got), len(rel.zips["linux_amd64"]))
	}

	before, looked := len(srv.Requests(t)), lookups()
	if err := s.PushArchiveAhead(ctx, foo, rel.Version, linux); err != nil {
		t.Fatal(err)
	}
	if n := blobUploads(t, srv, before); n != 0 {
		t.Errorf("an archive the repository holds was uploaded again ahead (%d blobs)", n)
	}
	// The tag was found missing once: the version's other archives do
	// not ask again until its push.
	if looked == 0 || lookups() != looked {
		t.Errorf("the tag 1.0.0 was looked up %d times by the first archive put ahead and %d by the next; want at least once, then never", looked, lookups()-looked)
	}

	before = len(srv.Requests(t))
	rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// darwin's zip, the empty config, SHA256SUMS, its signature, the
	// provenance record; linux's zip was there.
	if rep.BlobsUploaded != 5 || rep.BlobsPresent != 1 {
		t.Errorf("the push uploaded %d blobs and found %d; want 5 and linux's zip", rep.BlobsUploaded, rep.BlobsPresent)
	}
	// The store put it there: the push does not ask again.
	linuxBlob := "/blobs/sha256:" + sha256Hex(rel.zips["linux_amd64"])
	for _, r := range srv.Requests(t)[before:] {
		if strings.HasSuffix(r.URI, linuxBlob) {
			t.Errorf("the push asked the registry about the blob put ahead: %s %s", r.Method, r.URI)
		}
	}
	if held, found, err := s.Release(ctx, foo, rel.Version); err != nil || !found || len(held.Archives) != 2 {
		t.Errorf("after the push the tag holds %+v (found %v, %v); want both platforms", held, found, err)
	}

	// A version that has a tag is left to Push, which may refuse what
	// the tag holds before writing anything.
	windows := newRelease(t, foo, "1.0.0", "", "windows_amd64")
	before = len(srv.Requests(t))
	if err := s.PushArchiveAhead(ctx, foo, rel.Version, windows.Archives[0]); err != nil {
		t.Fatal(err)
	}
	if n := blobUploads(t, srv, before); n != 0 {
		t.Errorf("an archive of a tagged version was uploaded ahead (%d blobs)", n)
	}
}

// In an OCI image layout an archive pushed ahead is a file under blobs/
// that index.json does not name.
func TestPushArchiveAheadIntoALayout(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "layout")
	s := openStore(t, "oci-layout://"+dir, nil)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	if err := s.PushArchiveAhead(ctx, foo, rel.Version, rel.Archives[0]); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo")
	sum := sha256Hex(rel.zips["linux_amd64"])
	if got, err := os.ReadFile(filepath.Join(repo, "blobs", "sha256", sum)); err != nil || !bytes.Equal(got, rel.zips["linux_amd64"]) {
		t.Errorf("the blob pushed ahead: %d bytes, %v; want the archive", len(got), err)
	}
	if index, err := os.ReadFile(filepath.Join(repo, "index.json")); err == nil && strings.Contains(string(index), "1.0.0") {
		t.Errorf("index.json names the version before its push:\n%s", index)
	}
	rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BlobsPresent != 1 {
		t.Errorf("the push found %d blobs present; want the archive pushed ahead", rep.BlobsPresent)
	}
}

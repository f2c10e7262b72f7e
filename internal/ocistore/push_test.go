package ocistore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/layout"
)

// manifestWrites are the manifest PUTs the registry logged from the
// request at index from on, by reference (a digest, a tag), in order;
// blob uploads completed (PUT) before the first manifest PUT are counted
// in blobsFirst, any after it in blobsAfter. Any other write fails the
// test.
func manifestWrites(t *testing.T, srv *registrytest.Server, from int) (refs []string, blobsFirst, blobsAfter int) {
	t.Helper()
	for _, r := range srv.Requests(t)[from:] {
		switch {
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/blobs/uploads/"):
			if len(refs) == 0 {
				blobsFirst++
			} else {
				blobsAfter++
			}
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/manifests/"):
			refs = append(refs, r.URI[strings.LastIndex(r.URI, "/manifests/")+len("/manifests/"):])
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
		case r.Method == http.MethodPost && strings.HasSuffix(r.URI, "/blobs/uploads/"):
		default:
			t.Errorf("unexpected write: %s %s", r.Method, r.URI)
		}
	}
	return refs, blobsFirst, blobsAfter
}

// referrersTag is the tag of the referrers tag schema holding the
// referrers of the manifest with digest d ("sha256:hex" -> "sha256-hex").
func referrersTag(d string) string { return strings.Replace(d, ":", "-", 1) }

// provenanceDigest reads, independently of the store, the digest of the
// one provenance artifact the referrers tag of index lists.
func provenanceDigest(t *testing.T, srv *registrytest.Server, repo, index string) string {
	t.Helper()
	data, _ := rawGet(t, srv, "/v2/"+repo+"/manifests/"+referrersTag(index), "application/vnd.oci.image.index.v1+json")
	var refs struct {
		Manifests []struct {
			Digest       string `json:"digest"`
			ArtifactType string `json:"artifactType"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(data, &refs); err != nil {
		t.Fatal(err)
	}
	if len(refs.Manifests) != 1 || refs.Manifests[0].ArtifactType != ocistore.ArtifactTypeProvenance {
		t.Fatalf("the referrers of %s:\n%s", index, data)
	}
	return refs.Manifests[0].Digest
}

// TestProvenanceBeforeTag checks in the registry's own log the order of a
// push's writes: every blob, the platforms' manifests, the index by its
// digest, the provenance artifact referring to it (and the referrers tag
// of the index, since docker-registry 2.8 has no referrers API), and the
// version's tag last. Adding a platform keeps that order.
func TestProvenanceBeforeTag(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	foo := addrs.MustParseProvider("hashicorp/foo")
	repo := "tf/registry.opentofu.org/hashicorp/foo"
	both := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	linux := both
	linux.Archives = both.Archives[:1]

	check := func(rep ocistore.PushReport, from int, blobs int, platforms ...string) {
		t.Helper()
		got, _, err := s.Release(ctx, foo, both.Version)
		if err != nil {
			t.Fatal(err)
		}
		var leaves []string
		for _, p := range platforms {
			a, ok := got.Archive(addrs.MustParsePlatform(p))
			if !ok {
				t.Fatalf("no %s in %+v", p, got)
			}
			leaves = append(leaves, a.Manifest)
		}
		refs, blobsFirst, blobsAfter := manifestWrites(t, srv, from)
		if blobsFirst != blobs || blobsAfter != 0 {
			t.Errorf("%d blob uploads before the first manifest and %d after, want %d and 0", blobsFirst, blobsAfter, blobs)
		}
		if len(refs) != len(leaves)+4 {
			t.Fatalf("manifest PUTs %q, want %d platform manifests, the index, the provenance, its referrers tag, the tag", refs, len(leaves))
		}
		if got := refs[:len(leaves)]; !cmp.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(leaves))) {
			t.Errorf("first manifest PUTs %q, want the platforms' manifests %q", got, leaves)
		}
		prov := provenanceDigest(t, srv, repo, rep.Index)
		want := []string{rep.Index, prov, referrersTag(rep.Index), "1.0.0"}
		if got := refs[len(leaves):]; !slices.Equal(got, want) {
			t.Errorf("then the manifest PUTs %q, want the index by digest, the provenance, its referrers tag and the tag: %q", got, want)
		}
		if rep.Index != got.Index || !rep.IndexPushed || !rep.RecordPushed {
			t.Errorf("report %+v; the tag names %s", rep, got.Index)
		}
	}

	before := len(srv.Requests(t))
	rep, err := s.Push(ctx, linux.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// linux's zip, the empty config, SHA256SUMS, its signature, the
	// provenance record.
	check(rep, before, 5, "linux_amd64")

	// Adding darwin: only its zip is a new blob (linux's push kept the
	// release's whole record); the provenance artifact is new, as it
	// refers to the new index, and the tag moves to that index only once
	// its provenance is there.
	before = len(srv.Requests(t))
	rep, err = s.Push(ctx, both.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(rep, before, 1, "darwin_arm64")
	rec, err := s.ReadRecord(ctx, foo, both.Version)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*both.Record, rec); diff != "" {
		t.Errorf("the record after adding darwin (-pushed +read):\n%s", diff)
	}
}

// TestTagWithoutProvenanceIsRepaired: a tag holding the release's
// packages without a provenance artifact (as a push that tagged before
// writing its provenance and was killed in between leaves it, or another
// tool) gets the artifact; nothing else is written, the tag least of all.
func TestTagWithoutProvenanceIsRepaired(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	env := registryEnviron(t, srv)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	bare := rel
	bare.Record = nil
	first, err := openStore(t, "oci://"+template(srv), env).Push(ctx, bare.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, "oci://"+template(srv), env)
	if _, err := s.ReadRecord(ctx, foo, rel.Version); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadRecord of a tag without provenance: %v, want fs.ErrNotExist", err)
	}

	// A new run (a new Store) with the record.
	before := len(srv.Requests(t))
	rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{Policy: layout.Repair})
	if err != nil {
		t.Fatal(err)
	}
	if rep.IndexPushed || !rep.RecordPushed || rep.Index != first.Index || rep.BlobsUploaded != 3 || rep.ManifestsPushed != 1 {
		t.Errorf("report %+v, want the provenance (3 blobs, 1 manifest) and the index %s left as it is", rep, first.Index)
	}
	refs, blobs, _ := manifestWrites(t, srv, before)
	if blobs != 3 {
		t.Errorf("%d blob uploads, want 3: SHA256SUMS, its signature, the provenance record", blobs)
	}
	prov := provenanceDigest(t, srv, "tf/registry.opentofu.org/hashicorp/foo", first.Index)
	if want := []string{prov, referrersTag(first.Index)}; !slices.Equal(refs, want) {
		t.Errorf("manifest PUTs %q, want only the provenance and its referrers tag %q", refs, want)
	}
	rec, err := s.ReadRecord(ctx, foo, rel.Version)
	if err != nil {
		t.Fatalf("ReadRecord after the repair: %v", err)
	}
	if diff := cmp.Diff(*rel.Record, rec); diff != "" {
		t.Errorf("the repaired record (-pushed +read):\n%s", diff)
	}
	// And then nothing more to do.
	before = len(srv.Requests(t))
	if rep, err = s.Push(ctx, rel.Release, ocistore.PushOptions{Policy: layout.Repair}); err != nil || rep.RecordPushed || rep.IndexPushed {
		t.Errorf("the push after the repair: %+v, %v", rep, err)
	}
	if refs, blobs, _ := manifestWrites(t, srv, before); len(refs)+blobs != 0 {
		t.Errorf("the push after the repair wrote %d blobs and the manifests %q", blobs, refs)
	}
}

// TestRefusedProvenanceLeavesNoTag: a registry that refuses the
// provenance artifact fails the push before the tag is written: a new
// version gets no tag, an existing tag keeps naming its index and its
// provenance. The next push through the registry itself completes it
// without uploading a blob again.
func TestRefusedProvenanceLeavesNoTag(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	var refused atomic.Int32
	proxy := startProxy(t, srv, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPut || !strings.Contains(r.URL.Path, "/manifests/") {
			return false
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return true
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ArtifactType string `json:"artifactType"`
		}
		if json.Unmarshal(body, &m) != nil || m.ArtifactType != ocistore.ArtifactTypeProvenance {
			return false
		}
		refused.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"errors":[{"code":"DENIED","message":"requested access to the resource is denied"}]}`))
		return true
	})
	viaProxy := openStore(t, "oci://"+proxy.host+"/tf/${hostname}/${namespace}/${type}", []string{"SSL_CERT_FILE=" + srv.CAFile, "DOCKER_CONFIG=" + proxy.dockerConfig})
	direct := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	foo := addrs.MustParseProvider("hashicorp/foo")
	tagPuts := func(tag string) int {
		n := 0
		for _, uri := range srv.ManifestPuts(t) {
			if strings.HasSuffix(uri, "/manifests/"+tag) {
				n++
			}
		}
		return n
	}

	t.Run("new version", func(t *testing.T) {
		rel := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
		_, err := viaProxy.Push(ctx, rel.Release, ocistore.PushOptions{})
		if err == nil || refused.Load() == 0 {
			t.Fatalf("Push through a proxy refusing the provenance: %v (refused %d)", err, refused.Load())
		}
		checkNames(t, err, []string{srv.Password}, "registry.opentofu.org/hashicorp/foo", "1.0.0", "provenance")
		t.Log(err)
		if _, found, err := direct.Release(ctx, foo, rel.Version); found || err != nil {
			t.Errorf("after the refused provenance: found %v, %v; want no tag", found, err)
		}
		if n := tagPuts("1.0.0"); n != 0 {
			t.Errorf("the tag was written %d times", n)
		}

		uploads := srv.BlobUploads(t)
		rep, err := direct.Push(ctx, rel.Release, ocistore.PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := srv.BlobUploads(t) - uploads; n != 0 || rep.BlobsUploaded != 0 || !rep.IndexPushed || !rep.RecordPushed {
			t.Errorf("the push completing it: %d blob uploads, report %+v; want none, the tag and the provenance", n, rep)
		}
		if rec, err := direct.ReadRecord(ctx, foo, rel.Version); err != nil {
			t.Errorf("ReadRecord after the push completing it: %v", err)
		} else if diff := cmp.Diff(*rel.Record, rec); diff != "" {
			t.Errorf("the record (-pushed +read):\n%s", diff)
		}
	})

	t.Run("existing tag", func(t *testing.T) {
		both := newRelease(t, foo, "2.0.0", "", "linux_amd64", "darwin_arm64")
		linux := both
		linux.Archives = both.Archives[:1]
		linux.Record = &layout.Record{Sums: both.Record.Sums, Signature: both.Record.Signature, Provenance: layout.Provenance{
			KeyID: both.Record.Provenance.KeyID, SigningKeys: both.Record.Provenance.SigningKeys,
			Archives: map[string]layout.ProvenanceArchive{"linux_amd64": both.Record.Provenance.Archives["linux_amd64"]},
		}}
		first, err := direct.Push(ctx, linux.Release, ocistore.PushOptions{})
		if err != nil {
			t.Fatal(err)
		}
		puts := tagPuts("2.0.0")
		refusedBefore := refused.Load()
		if _, err := viaProxy.Push(ctx, both.Release, ocistore.PushOptions{}); err == nil || refused.Load() == refusedBefore {
			t.Fatalf("Push adding darwin through a proxy refusing the provenance: %v", err)
		}
		got, found, err := direct.Release(ctx, foo, both.Version)
		if err != nil || !found || got.Index != first.Index || len(got.Archives) != 1 {
			t.Errorf("after the refused provenance the tag names %+v (%v, %v), want the index %s it named", got, found, err, first.Index)
		}
		if n := tagPuts("2.0.0"); n != puts {
			t.Errorf("the tag was written %d more times", n-puts)
		}
		if rec, err := direct.ReadRecord(ctx, foo, both.Version); err != nil {
			t.Errorf("ReadRecord of the tag left as it was: %v", err)
		} else if diff := cmp.Diff(*linux.Record, rec); diff != "" {
			t.Errorf("the record of the tag left as it was (-pushed +read):\n%s", diff)
		}

		rep, err := direct.Push(ctx, both.Release, ocistore.PushOptions{})
		if err != nil || rep.BlobsUploaded != 0 || !rep.IndexPushed || !rep.RecordPushed {
			t.Fatalf("the push completing it: %+v, %v", rep, err)
		}
		if rec, err := direct.ReadRecord(ctx, foo, both.Version); err != nil {
			t.Errorf("ReadRecord after the push completing it: %v", err)
		} else if diff := cmp.Diff(*both.Record, rec); diff != "" {
			t.Errorf("the record (-pushed +read):\n%s", diff)
		}
	})
}

// layoutEntries lists index.json of a layout repository: per entry its
// artifactType and its tag ("" for none).
func layoutEntries(t *testing.T, repo string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "index.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Manifests []struct {
			ArtifactType string            `json:"artifactType"`
			Annotations  map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range idx.Manifests {
		out = append(out, m.ArtifactType+" "+m.Annotations["org.opencontainers.image.ref.name"])
	}
	return out
}

// TestLayoutProvenanceWithTag: in an OCI image layout the tag and the
// provenance enter index.json together. A push whose provenance cannot be
// stored leaves index.json as it was (no tag for a new version, the old
// index and record for an existing one); when a tag moves to a new index,
// index.json keeps one provenance artifact for it, the new one.
func TestLayoutProvenanceWithTag(t *testing.T) {
	ctx := t.Context()
	foo := addrs.MustParseProvider("hashicorp/foo")
	both := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	linux := both
	linux.Archives = both.Archives[:1]
	linux.Record = &layout.Record{Sums: both.Record.Sums, Signature: both.Record.Signature, Provenance: layout.Provenance{
		KeyID: both.Record.Provenance.KeyID, SigningKeys: both.Record.Provenance.SigningKeys,
		Archives: map[string]layout.ProvenanceArchive{"linux_amd64": both.Record.Provenance.Archives["linux_amd64"]},
	}}
	provenanceOf := func(r testRelease) string {
		// The same release in a scratch layout gives the same digests.
		dir := t.TempDir()
		if _, err := openStore(t, "oci-layout://"+dir, nil).Push(ctx, r.Release, ocistore.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo", "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		var idx struct {
			Manifests []struct {
				Digest       string `json:"digest"`
				ArtifactType string `json:"artifactType"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			t.Fatal(err)
		}
		for _, m := range idx.Manifests {
			if m.ArtifactType == ocistore.ArtifactTypeProvenance {
				return strings.TrimPrefix(m.Digest, "sha256:")
			}
		}
		t.Fatalf("no provenance in the scratch layout:\n%s", data)
		return ""
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo")
	s := openStore(t, "oci-layout://"+dir, nil)
	// block makes the provenance manifest's blob path a directory, so it
	// cannot be stored; the returned function removes it.
	block := func(hex string) func() {
		p := filepath.Join(repo, "blobs", "sha256", hex)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantOne := []string{ocistore.ArtifactTypeProvider + " 1.0.0", ocistore.ArtifactTypeProvenance + " "}

	// A new version whose provenance cannot be stored: no tag.
	unblock := block(provenanceOf(linux))
	if _, err := s.Push(ctx, linux.Release, ocistore.PushOptions{}); err == nil {
		t.Fatal("Push with the provenance blocked: no error")
	} else {
		t.Log(err)
	}
	if got := layoutEntries(t, repo); len(got) != 0 {
		t.Errorf("index.json after the failed push lists %q, want nothing", got)
	}
	if _, err := s.Versions(ctx, foo); !errors.Is(err, layout.ErrNotInMirror) {
		t.Errorf("Versions after the failed push: %v, want ErrNotInMirror", err)
	}
	unblock()
	first, err := s.Push(ctx, linux.Release, ocistore.PushOptions{})
	if err != nil || !first.IndexPushed || !first.RecordPushed {
		t.Fatalf("Push once unblocked: %+v, %v", first, err)
	}
	if got := layoutEntries(t, repo); !slices.Equal(got, wantOne) {
		t.Errorf("index.json lists %q, want %q", got, wantOne)
	}

	// Adding darwin with its provenance blocked: the tag and the record
	// stay as they were.
	unblock = block(provenanceOf(both))
	if _, err := s.Push(ctx, both.Release, ocistore.PushOptions{}); err == nil {
		t.Fatal("Push adding darwin with the provenance blocked: no error")
	}
	got, _, err := s.Release(ctx, foo, both.Version)
	if err != nil || got.Index != first.Index {
		t.Errorf("after the failed push the tag names %s (%v), want %s", got.Index, err, first.Index)
	}
	if rec, err := s.ReadRecord(ctx, foo, both.Version); err != nil {
		t.Errorf("ReadRecord after the failed push: %v", err)
	} else if diff := cmp.Diff(*linux.Record, rec); diff != "" {
		t.Errorf("the record after the failed push (-linux's +read):\n%s", diff)
	}
	unblock()

	// Then it is added: one tag, one provenance, the new one.
	rep, err := s.Push(ctx, both.Release, ocistore.PushOptions{})
	if err != nil || !rep.IndexPushed || !rep.RecordPushed || rep.Index == first.Index {
		t.Fatalf("Push adding darwin: %+v, %v", rep, err)
	}
	if got := layoutEntries(t, repo); !slices.Equal(got, wantOne) {
		t.Errorf("index.json lists %q, want %q", got, wantOne)
	}
	if rec, err := s.ReadRecord(ctx, foo, both.Version); err != nil {
		t.Errorf("ReadRecord after adding darwin: %v", err)
	} else if diff := cmp.Diff(*both.Record, rec); diff != "" {
		t.Errorf("the record after adding darwin (-pushed +read):\n%s", diff)
	}
}

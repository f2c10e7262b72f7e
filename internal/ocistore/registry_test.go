package ocistore_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/layout"
)

// TestPushAndReadBack pushes a release into a real registry and reads it
// back through the API and, independently, as raw registry documents,
// which must have exactly the shapes OpenTofu reads.
func TestPushAndReadBack(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.2.0+abc", "", "linux_amd64", "darwin_arm64")

	rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	repo := srv.Host + "/tf/registry.opentofu.org/hashicorp/foo"
	if rep.Repository != repo || rep.Tag != "1.2.0_abc" || !rep.IndexPushed || !rep.RecordPushed {
		t.Errorf("report = %+v", rep)
	}
	// Two zips, the empty config, SHA256SUMS, signature, provenance.
	if rep.BlobsUploaded != 6 || rep.BlobsPresent != 0 || rep.ManifestsPushed != 3 {
		t.Errorf("report counts = %+v, want 6 blobs uploaded, 3 manifests pushed", rep)
	}
	if got := srv.BlobUploads(t); got != 6 {
		t.Errorf("the registry logged %d blob uploads, want 6", got)
	}
	// Publish order, from the registry's log: every blob, then the
	// platforms' manifests, then the index by its digest, then the
	// provenance (and its referrers tag), and the tag last.
	var order []string
	for _, r := range srv.Requests(t) {
		switch {
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/blobs/uploads/"):
			order = append(order, "blob")
		case r.Method == http.MethodPut && strings.HasSuffix(r.URI, "/manifests/1.2.0_abc"):
			order = append(order, "tag")
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/manifests/sha256-"):
			order = append(order, "referrers-tag")
		case r.Method == http.MethodPut && strings.HasSuffix(r.URI, "/manifests/"+rep.Index):
			order = append(order, "index")
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/manifests/sha256:"):
			order = append(order, "manifest")
		}
	}
	wantOrder := []string{"blob", "blob", "blob", "blob", "blob", "blob", "manifest", "manifest", "index", "manifest", "referrers-tag", "tag"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("writes in the order %q, want %q", order, wantOrder)
	}
	if name, err := s.Repository(foo); err != nil || name != repo {
		t.Errorf("Repository = %q, %v; want %q", name, err, repo)
	}

	// Versions, Release, OpenArchive, ReadRecord.
	vs, err := s.Versions(ctx, foo)
	if err != nil || len(vs) != 1 || vs[0].String() != "1.2.0+abc" {
		t.Fatalf("Versions = %v, %v", vs, err)
	}
	got, found, err := s.Release(ctx, foo, rel.Version)
	if err != nil || !found {
		t.Fatalf("Release: found %v, %v", found, err)
	}
	if got.Index != rep.Index || got.Tag != "1.2.0_abc" || len(got.Archives) != 2 {
		t.Fatalf("Release = %+v (push reported index %s)", got, rep.Index)
	}
	for _, a := range got.Archives {
		want := rel.zips[a.Platform.String()]
		if a.Digest != "sha256:"+sha256Hex(want) || string(a.ZH) != "zh:"+sha256Hex(want) || a.Size != int64(len(want)) {
			t.Errorf("%s: %+v, want the digest and size of the zip", a.Platform, a)
		}
		if a.Filename != fmt.Sprintf("terraform-provider-foo_1.2.0+abc_%s.zip", a.Platform) {
			t.Errorf("%s: filename %q", a.Platform, a.Filename)
		}
		rc, err := s.OpenArchive(ctx, foo, rel.Version, a.Platform)
		if err != nil {
			t.Fatalf("OpenArchive %s: %v", a.Platform, err)
		}
		if data := readAll(t, rc); !bytes.Equal(data, want) {
			t.Errorf("OpenArchive %s: other bytes", a.Platform)
		}
	}
	if got.Archives[0].Platform.String() != "darwin_arm64" {
		t.Errorf("archives not sorted: %+v", got.Archives)
	}
	if _, err := s.OpenArchive(ctx, foo, rel.Version, addrs.MustParsePlatform("windows_amd64")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenArchive of a missing platform: %v, want fs.ErrNotExist", err)
	}
	rec, err := s.ReadRecord(ctx, foo, rel.Version)
	if err != nil {
		t.Fatalf("ReadRecord: %v", err)
	}
	if diff := cmp.Diff(*rel.Record, rec); diff != "" {
		t.Errorf("ReadRecord differs from the pushed record (-pushed +read):\n%s", diff)
	}
	v2, _ := addrs.ParseVersion("2.0.0")
	if _, found, err := s.Release(ctx, foo, v2); found || err != nil {
		t.Errorf("Release of a missing version: found %v, %v", found, err)
	}
	if _, err := s.ReadRecord(ctx, foo, v2); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRecord of a missing version: %v, want fs.ErrNotExist", err)
	}
	if _, err := s.Versions(ctx, addrs.MustParseProvider("hashicorp/nothere")); !errors.Is(err, layout.ErrNotInMirror) {
		t.Errorf("Versions of a missing repository: %v, want layout.ErrNotInMirror", err)
	}

	// The raw documents, as OpenTofu reads them (notes/oci.md §1.3).
	path := "/v2/tf/registry.opentofu.org/hashicorp/foo/manifests/"
	index, hdr := rawGet(t, srv, path+"1.2.0_abc", "application/vnd.oci.image.index.v1+json")
	if ct := hdr.Get("Content-Type"); ct != "application/vnd.oci.image.index.v1+json" {
		t.Errorf("index Content-Type %q", ct)
	}
	var idx struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		ArtifactType  string `json:"artifactType"`
		Manifests     []struct {
			MediaType    string            `json:"mediaType"`
			Digest       string            `json:"digest"`
			Size         int64             `json:"size"`
			Platform     map[string]string `json:"platform"`
			ArtifactType string            `json:"artifactType"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(index, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.SchemaVersion != 2 || idx.MediaType != "application/vnd.oci.image.index.v1+json" || idx.ArtifactType != "application/vnd.opentofu.provider" || len(idx.Manifests) != 2 {
		t.Fatalf("index:\n%s", index)
	}
	for i, plat := range []string{"darwin_arm64", "linux_amd64"} {
		m := idx.Manifests[i]
		os, arch, _ := strings.Cut(plat, "_")
		if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.ArtifactType != "application/vnd.opentofu.provider-target" ||
			!cmp.Equal(m.Platform, map[string]string{"os": os, "architecture": arch}) {
			t.Errorf("index entry %d: %+v", i, m)
		}
		leaf, _ := rawGet(t, srv, path+m.Digest, "application/vnd.oci.image.manifest.v1+json")
		zip := rel.zips[plat]
		want := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.opentofu.provider-target",`+
			`"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"data":"e30="},`+
			`"layers":[{"mediaType":"archive/zip","digest":"sha256:%s","size":%d,"annotations":{"org.opencontainers.image.title":"terraform-provider-foo_1.2.0+abc_%s.zip"}}]}`,
			sha256Hex(zip), len(zip), plat)
		if string(leaf) != want {
			t.Errorf("%s manifest:\n%s\nwant\n%s", plat, leaf, want)
		}
		if "sha256:"+sha256Hex(leaf) != m.Digest || int64(len(leaf)) != m.Size {
			t.Errorf("%s: index entry digest/size do not match the manifest", plat)
		}
	}
	// The tags: the version, and the referrers tag of the index (the
	// registry has no referrers API).
	tagsDoc, _ := rawGet(t, srv, "/v2/tf/registry.opentofu.org/hashicorp/foo/tags/list", "")
	var tags struct{ Tags []string }
	if err := json.Unmarshal(tagsDoc, &tags); err != nil {
		t.Fatal(err)
	}
	slices.Sort(tags.Tags)
	wantTags := []string{"1.2.0_abc", strings.Replace(rep.Index, ":", "-", 1)}
	if !slices.Equal(tags.Tags, wantTags) {
		t.Errorf("tags = %q, want %q", tags.Tags, wantTags)
	}
}

// TestSecondPushUploadsNothing: pushing the same release again finds
// everything and writes nothing, counted in the registry's own log.
func TestSecondPushUploadsNothing(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64", "darwin_arm64", "windows_amd64")
	first, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := srv.Requests(t)
	uploads := srv.BlobUploads(t)

	// A new Store, as a new run would have.
	s2 := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	rep, err := s2.Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := srv.Requests(t)[len(before):]
	if n := srv.BlobUploads(t); n != uploads {
		t.Errorf("the second push made %d blob uploads, want 0", n-uploads)
	}
	var writes []string
	for _, r := range after {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			writes = append(writes, r.Method+" "+r.URI)
		}
	}
	if len(writes) > 0 {
		t.Errorf("the second push wrote:\n%s", strings.Join(writes, "\n"))
	}
	if rep.BlobsUploaded != 0 || rep.ManifestsPushed != 0 || rep.IndexPushed || rep.RecordPushed || rep.Index != first.Index {
		t.Errorf("second report = %+v (first index %s)", rep, first.Index)
	}
	t.Logf("the second push made %d requests, none of them writes", len(after))
}

// TestAddPlatformRewritesOnlyTheIndex: a platform added to a version
// uploads its own package and rewrites the index (and the provenance,
// which lists it); the other platforms' packages and manifests are not
// touched, and the index keeps them.
func TestAddPlatformRewritesOnlyTheIndex(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	env := registryEnviron(t, srv)
	s := openStore(t, "oci://"+template(srv), env)
	foo := addrs.MustParseProvider("hashicorp/foo")
	both := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	linux := both
	linux.Archives = both.Archives[:1]
	linux.Record = &layout.Record{Sums: both.Record.Sums, Signature: both.Record.Signature, Provenance: layout.Provenance{
		KeyID: both.Record.Provenance.KeyID, SigningKeys: both.Record.Provenance.SigningKeys,
		Archives: map[string]layout.ProvenanceArchive{"linux_amd64": both.Record.Provenance.Archives["linux_amd64"]},
	}}
	darwin := both
	darwin.Archives = both.Archives[1:]
	darwin.Record = &layout.Record{Sums: both.Record.Sums, Signature: both.Record.Signature, Provenance: layout.Provenance{
		KeyID: both.Record.Provenance.KeyID, SigningKeys: both.Record.Provenance.SigningKeys,
		Archives: map[string]layout.ProvenanceArchive{"darwin_arm64": both.Record.Provenance.Archives["darwin_arm64"]},
	}}

	first, err := s.Push(ctx, linux.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	linuxRel, _, err := s.Release(ctx, foo, both.Version)
	if err != nil {
		t.Fatal(err)
	}
	before := len(srv.Requests(t))
	rep, err := s.Push(ctx, darwin.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var puts []string
	uploads := 0
	for _, r := range srv.Requests(t)[before:] {
		switch {
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/blobs/uploads/"):
			uploads++
		case r.Method == http.MethodPut && strings.Contains(r.URI, "/manifests/"):
			puts = append(puts, r.URI[strings.LastIndex(r.URI, "/")+1:])
		case r.Method != http.MethodGet && r.Method != http.MethodHead && !strings.Contains(r.URI, "/blobs/uploads/"):
			t.Errorf("unexpected write: %s %s", r.Method, r.URI)
		}
	}
	// Blobs: darwin's zip and the new provenance record (SHA256SUMS, its
	// signature and the empty config are there already).
	if uploads != 2 || rep.BlobsUploaded != 2 {
		t.Errorf("adding a platform uploaded %d blobs (report %+v), want 2: the new package and the new provenance record", uploads, rep)
	}
	darwinEntry := ""
	got, _, err := s.Release(ctx, foo, both.Version)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got.Archives {
		if a.Platform.String() == "darwin_arm64" {
			darwinEntry = a.Manifest
		}
	}
	// Manifests: darwin's, the new index by its digest, the provenance,
	// the referrers tag of the new index, then the tag; never linux's
	// manifest.
	if len(puts) != 5 || puts[0] != darwinEntry || puts[1] != got.Index || !strings.HasPrefix(puts[3], "sha256-") || puts[4] != "1.0.0" {
		t.Errorf("manifest PUTs = %q, want darwin's manifest %s, the index %s, the provenance, its referrers tag and the tag", puts, darwinEntry, got.Index)
	}
	for _, ref := range puts {
		if ref == linuxRel.Archives[0].Manifest {
			t.Errorf("linux's manifest was pushed again")
		}
	}
	if len(got.Archives) != 2 || got.Archives[1] != linuxRel.Archives[0] || got.Index == first.Index {
		t.Errorf("Release after adding darwin = %+v; linux was %+v", got, linuxRel.Archives[0])
	}
	// The same index as pushing both at once, in a fresh registry.
	srv2 := registrytest.StartWith(t, registrytest.Options{CA: srv.CA})
	s2 := openStore(t, "oci://"+template(srv2), registryEnviron(t, srv2))
	all, err := s2.Push(ctx, both.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if all.Index != got.Index {
		t.Errorf("index after adding a platform %s, pushing both at once %s", got.Index, all.Index)
	}
	rec, err := s.ReadRecord(ctx, foo, both.Version)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*both.Record, rec); diff != "" {
		t.Errorf("the provenance after adding a platform (-both +read):\n%s", diff)
	}
}

// TestChangedTagIsRefused: a tag holding another package for a platform
// refuses the push before anything is written; Overwrite replaces it.
func TestChangedTagIsRefused(t *testing.T) {
	ctx := t.Context()
	srv, s, old := pushedFoo(t)
	foo := old.Provider
	was, _, err := s.Release(ctx, foo, old.Version)
	if err != nil {
		t.Fatal(err)
	}
	before := len(srv.Requests(t))

	changed := newRelease(t, foo, "1.0.0", "re-released", "linux_amd64", "darwin_arm64")
	_, err = s.Push(ctx, changed.Release, ocistore.PushOptions{Policy: layout.Repair})
	var conflict *layout.ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("Push of a changed package: %v, want a *layout.ConflictError", err)
	}
	msg := err.Error()
	repo := srv.Host + "/tf/registry.opentofu.org/hashicorp/foo"
	for _, want := range []string{
		"registry.opentofu.org/hashicorp/foo", "1.0.0", repo + ":1.0.0", "linux_amd64",
		"sha256:" + sha256Hex(old.zips["linux_amd64"]), "sha256:" + sha256Hex(changed.zips["linux_amd64"]),
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not name %q:\n%s", want, msg)
		}
	}
	t.Logf("refused: %v", err)
	for _, r := range srv.Requests(t)[before:] {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			t.Errorf("the refused push wrote: %s %s", r.Method, r.URI)
		}
	}
	now, _, err := s.Release(ctx, foo, old.Version)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(was, now) {
		t.Errorf("the release changed: %+v, was %+v", now, was)
	}

	// Overwrite replaces it, and adds darwin.
	rep, err := s.Push(ctx, changed.Release, ocistore.PushOptions{Overwrite: true})
	if err != nil {
		t.Fatalf("Push with Overwrite: %v", err)
	}
	now, _, err = s.Release(ctx, foo, old.Version)
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Archives) != 2 || now.Index != rep.Index {
		t.Fatalf("after overwrite: %+v", now)
	}
	for _, a := range now.Archives {
		if a.Digest != "sha256:"+sha256Hex(changed.zips[a.Platform.String()]) {
			t.Errorf("after overwrite %s holds %s", a.Platform, a.Digest)
		}
	}
	rec, err := s.ReadRecord(ctx, foo, old.Version)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Sums, changed.Record.Sums) || !bytes.Equal(rec.Signature, changed.Record.Signature) {
		t.Errorf("after overwrite the record is not the new one")
	}
}

// TestRecordPolicy: a release whose packages are there already but whose
// record differs (a new signature) is refused under Refuse and replaces
// the record under Repair, leaving one provenance artifact.
func TestRecordPolicy(t *testing.T) {
	ctx := t.Context()
	_, s, rel := pushedFoo(t)

	// The same key in another form (a registry re-issued it): no
	// conflict, and the repository keeps its own form.
	reissued := rel
	again := *rel.Record
	again.Provenance.SigningKeys = []string{"re-issued form of " + rel.Record.Provenance.KeyID}
	reissued.Record = &again
	if _, err := s.Push(ctx, reissued.Release, ocistore.PushOptions{Policy: layout.Refuse}); err != nil {
		t.Fatalf("Refuse, the same key re-issued: %v", err)
	}
	kept, err := s.ReadRecord(ctx, rel.Provider, rel.Version)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept.Provenance.SigningKeys, rel.Record.Provenance.SigningKeys) {
		t.Errorf("after a push of the re-issued form under Refuse the kept keys are %q", kept.Provenance.SigningKeys)
	}
	other := again
	other.Provenance.KeyID = "FEDCBA9876543210"
	reissued.Record = &other
	var conflict *layout.ConflictError
	if _, err := s.Push(ctx, reissued.Release, ocistore.PushOptions{Policy: layout.Refuse}); !errors.As(err, &conflict) {
		t.Fatalf("Refuse, another key: %v, want a conflict", err)
	}

	resigned := rel
	rec := *rel.Record
	rec.Signature = []byte("another signature")
	resigned.Record = &rec
	if _, err := s.Push(ctx, resigned.Release, ocistore.PushOptions{Policy: layout.Refuse}); !errors.As(err, &conflict) {
		t.Fatalf("Refuse: %v, want a conflict", err)
	}
	rep, err := s.Push(ctx, resigned.Release, ocistore.PushOptions{Policy: layout.Repair})
	if err != nil {
		t.Fatalf("Repair: %v", err)
	}
	if rep.IndexPushed || !rep.RecordPushed || rep.BlobsUploaded != 1 {
		t.Errorf("Repair report %+v, want only the new signature and provenance manifest", rep)
	}
	got, err := s.ReadRecord(ctx, rel.Provider, rel.Version)
	if err != nil {
		t.Fatalf("ReadRecord after Repair: %v", err)
	}
	if string(got.Signature) != "another signature" {
		t.Errorf("signature after Repair %q", got.Signature)
	}
}

// TestDeterministic: the same release pushed into two fresh registries
// gives the same digests.
func TestDeterministic(t *testing.T) {
	ctx := t.Context()
	a := registrytest.Start(t)
	b := registrytest.StartWith(t, registrytest.Options{CA: a.CA})
	rel := newRelease(t, addrs.MustParseProvider("registry.test/acme/baz"), "0.3.0-beta.1", "", "linux_amd64", "linux_arm64", "windows_amd64", "darwin_arm64")
	var indexes []string
	for _, srv := range []*registrytest.Server{a, b} {
		s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
		rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{Parallel: 2})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := s.Release(ctx, rel.Provider, rel.Version)
		if err != nil {
			t.Fatal(err)
		}
		if got.Index != rep.Index {
			t.Errorf("Release index %s, pushed %s", got.Index, rep.Index)
		}
		indexes = append(indexes, rep.Index)
	}
	if indexes[0] != indexes[1] {
		t.Errorf("index digests differ between two fresh registries: %q", indexes)
	}
}

// TestArchiveAlreadyInRepository: an archive without a staged file is
// published from the blob the repository holds.
func TestArchiveAlreadyInRepository(t *testing.T) {
	ctx := t.Context()
	_, s, rel := pushedFoo(t)
	foo := rel.Provider
	again := rel
	again.Version, _ = addrs.ParseVersion("1.0.1")
	again.Archives = slices.Clone(rel.Archives)
	again.Archives[0].Staged = ""
	again.Record = nil
	if _, err := s.Push(ctx, again.Release, ocistore.PushOptions{}); err != nil {
		t.Fatalf("Push of an archive the repository holds: %v", err)
	}
	got, found, err := s.Release(ctx, foo, again.Version)
	if err != nil || !found || got.Archives[0].Digest != "sha256:"+sha256Hex(rel.zips["linux_amd64"]) {
		t.Fatalf("Release = %+v, %v, %v", got, found, err)
	}
	missing := newRelease(t, foo, "1.0.2", "other", "linux_amd64")
	missing.Archives[0].Staged = ""
	if _, err := s.Push(ctx, missing.Release, ocistore.PushOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Push of an archive neither staged nor in the repository: %v", err)
	}
	vs, err := s.Versions(ctx, foo)
	if err != nil || len(vs) != 2 {
		t.Errorf("Versions = %v, %v", vs, err)
	}
}

// TestOneRepositoryPerProvider: a template that maps two providers to
// one repository is refused when the second is named.
func TestOneRepositoryPerProvider(t *testing.T) {
	s := openStore(t, "oci://registry.example.com/tf/${namespace}", nil)
	if _, err := s.Repository(addrs.MustParseProvider("hashicorp/foo")); err != nil {
		t.Fatal(err)
	}
	_, err := s.Repository(addrs.MustParseProvider("hashicorp/bar"))
	if err == nil || !strings.Contains(err.Error(), "hashicorp/foo") || !strings.Contains(err.Error(), "hashicorp/bar") ||
		!strings.Contains(err.Error(), "registry.example.com/tf/${namespace}") {
		t.Errorf("two providers in one repository: %v", err)
	}
}

// TestConcurrentPushes pushes several versions of several providers at
// once through one Store (run with -race).
func TestConcurrentPushes(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	var rels []testRelease
	for _, p := range []string{"hashicorp/foo", "hashicorp/bar"} {
		for _, v := range []string{"1.0.0", "1.1.0"} {
			rels = append(rels, newRelease(t, addrs.MustParseProvider(p), v, "", "linux_amd64", "darwin_arm64"))
		}
	}
	errs := make(chan error, len(rels))
	for _, r := range rels {
		go func() {
			_, err := s.Push(ctx, r.Release, ocistore.PushOptions{})
			errs <- err
		}()
	}
	for range rels {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, r := range rels {
		got, found, err := s.Release(ctx, r.Provider, r.Version)
		if err != nil || !found || len(got.Archives) != 2 {
			t.Errorf("%s %s: %+v %v %v", r.Provider, r.Version, got, found, err)
		}
	}
}

// TestLargeArchiveIsStreamed pushes a 64 MiB archive into a registry and
// a layout: the upload streams from the staged file, so the process
// allocates far less than the archive's size.
func TestLargeArchiveIsStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx := t.Context()
	srv := registrytest.Start(t)
	foo := addrs.MustParseProvider("hashicorp/big")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	const size = 64 << 20
	f, err := os.OpenFile(rel.Archives[0].Staged, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	chunk := make([]byte, 1<<20)
	for i := 0; i < size/len(chunk); i++ {
		if _, err := rand.Read(chunk); err != nil {
			t.Fatal(err)
		}
		h.Write(chunk)
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	zh := hashing.Hash("zh:" + hex.EncodeToString(h.Sum(nil)))
	rel.Archives[0].Hashes = []hashing.Hash{zh}
	rel.Record = nil

	for _, ref := range []string{"oci://" + template(srv), "oci-layout://" + t.TempDir()} {
		s := openStore(t, ref, registryEnviron(t, srv))
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := s.Push(ctx, rel.Release, ocistore.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: pushing a %d MiB archive allocated %.1f MiB", ref, size>>20, float64(allocated)/(1<<20))
		if allocated > size/4 {
			t.Errorf("%s: pushing a %d MiB archive allocated %d MiB: it is not streamed", ref, size>>20, allocated>>20)
		}
		got, _, err := s.Release(ctx, foo, rel.Version)
		if err != nil || got.Archives[0].ZH != zh || got.Archives[0].Size != size {
			t.Errorf("%s: Release = %+v, %v", ref, got, err)
		}
	}
}

// TestMergesWithAnotherToolsIndex: a tag pushed by another tool (the
// ORAS 1.3 recipe of OpenTofu's documentation: an image config with the
// platform, a created annotation) holding the same package for a
// platform is kept as it is; the release's other platforms are added.
func TestMergesWithAnotherToolsIndex(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")

	repo, err := remote.NewRepository(srv.Host + "/tf/registry.opentofu.org/hashicorp/foo")
	if err != nil {
		t.Fatal(err)
	}
	repo.Client = &auth.Client{Client: srv.CA.Client(), Credential: auth.StaticCredential(srv.Host, auth.Credential{Username: srv.Username, Password: srv.Password})}
	push := func(mediaType string, data []byte) ocispec.Descriptor {
		d := content.NewDescriptorFromBytes(mediaType, data)
		if err := repo.Push(ctx, d, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	zipData := rel.zips["linux_amd64"]
	layer := push("archive/zip", zipData)
	layer.Annotations = map[string]string{"org.opencontainers.image.title": "terraform-provider-foo_1.0.0_linux_amd64.zip"}
	config := push("application/vnd.oci.image.config.v1+json", []byte(`{"architecture":"amd64","os":"linux"}`))
	manifest, _ := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ocistore.ArtifactTypeProviderTarget, Config: config, Layers: []ocispec.Descriptor{layer},
		Annotations: map[string]string{"org.opencontainers.image.created": "2025-01-02T03:04:05Z"},
	})
	md := push(ocispec.MediaTypeImageManifest, manifest)
	md.ArtifactType = ocistore.ArtifactTypeProviderTarget
	md.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	index, _ := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		ArtifactType: ocistore.ArtifactTypeProvider, Manifests: []ocispec.Descriptor{md},
	})
	id := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, index)
	if err := repo.PushReference(ctx, id, bytes.NewReader(index), "1.0.0"); err != nil {
		t.Fatal(err)
	}

	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	before := srv.BlobUploads(t)
	rep, err := s.Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatalf("Push over another tool's tag with the same package: %v", err)
	}
	if !rep.IndexPushed {
		t.Errorf("darwin was not added: %+v", rep)
	}
	if n := srv.BlobUploads(t) - before; n != 5 { // darwin's zip, the empty config, SHA256SUMS, signature, provenance
		t.Errorf("%d blob uploads, want 5 (linux's package is there)", n)
	}
	got, _, err := s.Release(ctx, foo, rel.Version)
	if err != nil {
		t.Fatal(err)
	}
	linux, _ := got.Archive(addrs.MustParsePlatform("linux_amd64"))
	if len(got.Archives) != 2 || linux.Manifest != md.Digest.String() {
		t.Errorf("Release = %+v; want the other tool's linux manifest %s kept", got, md.Digest)
	}

	// A tag naming a platform manifest directly is no provider release:
	// reading says so, and a push refuses to replace it.
	if err := repo.PushReference(ctx, md, bytes.NewReader(manifest), "2.0.0"); err != nil {
		t.Fatal(err)
	}
	v2, _ := addrs.ParseVersion("2.0.0")
	if _, _, err := s.Release(ctx, foo, v2); !errors.Is(err, ocistore.ErrNotProvider) {
		t.Errorf("Release of a tag naming an image manifest: %v, want ErrNotProvider", err)
	} else {
		checkNames(t, err, nil, "registry.opentofu.org/hashicorp/foo", "2.0.0", srv.Host+"/tf/registry.opentofu.org/hashicorp/foo:2.0.0")
	}
	var conflict *layout.ConflictError
	if _, err := s.Push(ctx, newRelease(t, foo, "2.0.0", "", "linux_amd64").Release, ocistore.PushOptions{}); !errors.As(err, &conflict) {
		t.Errorf("Push over a tag naming an image manifest: %v, want a conflict", err)
	}
}

// TestReadsOnceWhatItNeeds counts requests in the registry's own log:
// OpenArchive reads the index under the tag (one request) and its
// platform's manifest only; Release then RecordOf read the tag once; a
// push of what the tag holds already checks nothing it has just read.
func TestReadsOnceWhatItNeeds(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	rel := newRelease(t, addrs.MustParseProvider("hashicorp/foo"), "1.0.0", "", "linux_amd64", "darwin_arm64", "windows_amd64")
	if _, err := s.Push(ctx, rel.Release, ocistore.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	type counts struct{ tag, manifests, blobHeads int }
	count := func(f func()) counts {
		t.Helper()
		before := len(srv.Requests(t))
		f()
		var c counts
		for _, r := range srv.Requests(t)[before:] {
			switch {
			case strings.HasSuffix(r.URI, "/manifests/"+ocistore.Tag(rel.Version)):
				c.tag++
			case strings.Contains(r.URI, "/manifests/sha256:"):
				c.manifests++
			case r.Method == http.MethodHead && strings.Contains(r.URI, "/blobs/"):
				c.blobHeads++
			}
		}
		return c
	}

	c := count(func() {
		rc, err := s.OpenArchive(ctx, rel.Provider, rel.Version, addrs.MustParsePlatform("darwin_arm64"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readAll(t, rc), rel.zips["darwin_arm64"]) {
			t.Error("OpenArchive: other bytes")
		}
	})
	if c.tag != 1 || c.manifests != 1 {
		t.Errorf("OpenArchive of one of 3 platforms read the tag %d times and %d manifests by digest; want once, and its own", c.tag, c.manifests)
	}

	c = count(func() {
		got, found, err := s.Release(ctx, rel.Provider, rel.Version)
		if err != nil || !found {
			t.Fatalf("Release: %v, %v", found, err)
		}
		rec, err := s.RecordOf(ctx, got)
		if err != nil {
			t.Fatalf("RecordOf: %v", err)
		}
		if !bytes.Equal(rec.Sums, rel.Record.Sums) {
			t.Error("RecordOf: other SHA256SUMS")
		}
	})
	if c.tag != 1 {
		t.Errorf("Release and RecordOf read the tag %d times; want once", c.tag)
	}

	var rep ocistore.PushReport
	c = count(func() {
		var err error
		if rep, err = s.Push(ctx, rel.Release, ocistore.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if c.blobHeads != 0 || rep.RecordPushed || rep.IndexPushed {
		t.Errorf("a push of what the tag holds checked %d blobs (report %+v); want none", c.blobHeads, rep)
	}
}

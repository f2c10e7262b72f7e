package ocistore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/layout"
)

// skopeo returns the skopeo binary, skipping the test without one unless
// it must run (serverproc.Required: CI=true or TFMIRROR_E2E=1).
func skopeo(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("skopeo")
	if err != nil {
		if serverproc.Required() {
			t.Fatalf("skopeo is required here (scripts/test installs it): %v", err)
		}
		t.Skipf("no skopeo (apt-get install -y skopeo): %v", err)
	}
	return p
}

func runSkopeo(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, skopeo(t), append([]string{"--insecure-policy"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("skopeo %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestLayout pushes into an OCI image layout, reads it back through the
// API and with skopeo, and copies it with skopeo into a registry, where
// the store reads the same release.
func TestLayout(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "layout")
	s := openStore(t, "oci-layout://"+dir, nil)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64", "darwin_arm64")
	rel2 := newRelease(t, foo, "1.1.0", "", "linux_amd64")
	for _, r := range []testRelease{rel, rel2} {
		if _, err := s.Push(ctx, r.Release, ocistore.PushOptions{}); err != nil {
			t.Fatalf("Push %s: %v", r.Version, err)
		}
	}
	repo := filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo")
	if name, err := s.Repository(foo); err != nil || name != repo {
		t.Errorf("Repository = %q, %v; want %q", name, err, repo)
	}
	indexJSON, err := os.ReadFile(filepath.Join(repo, "index.json"))
	if err != nil {
		t.Fatal(err)
	}

	// Read back.
	vs, err := s.Versions(ctx, foo)
	if err != nil || len(vs) != 2 {
		t.Fatalf("Versions = %v, %v", vs, err)
	}
	got, found, err := s.Release(ctx, foo, rel.Version)
	if err != nil || !found || len(got.Archives) != 2 {
		t.Fatalf("Release = %+v, %v, %v", got, found, err)
	}
	for _, a := range got.Archives {
		rc, err := s.OpenArchive(ctx, foo, rel.Version, a.Platform)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readAll(t, rc), rel.zips[a.Platform.String()]) {
			t.Errorf("%s: other bytes", a.Platform)
		}
	}
	rec, err := s.ReadRecord(ctx, foo, rel.Version)
	if err != nil {
		t.Fatalf("ReadRecord: %v", err)
	}
	if diff := cmp.Diff(*rel.Record, rec); diff != "" {
		t.Errorf("ReadRecord (-pushed +read):\n%s", diff)
	}

	// The layout holds exactly the layout's files, index.json lists the
	// tags and the provenance artifacts, and a second push changes nothing.
	var files []string
	_ = filepath.WalkDir(repo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(repo, p)
			files = append(files, rel)
		}
		return err
	})
	for _, f := range files {
		if f != "oci-layout" && f != "index.json" && !strings.HasPrefix(f, "blobs/sha256/") {
			t.Errorf("unexpected file in the layout: %s", f)
		}
	}
	var idx struct {
		Manifests []struct {
			Digest       string            `json:"digest"`
			ArtifactType string            `json:"artifactType"`
			Annotations  map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(indexJSON, &idx); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range idx.Manifests {
		listed = append(listed, m.ArtifactType+" "+m.Annotations["org.opencontainers.image.ref.name"])
	}
	wantListed := []string{ocistore.ArtifactTypeProvider + " 1.0.0", ocistore.ArtifactTypeProvider + " 1.1.0", ocistore.ArtifactTypeProvenance + " ", ocistore.ArtifactTypeProvenance + " "}
	if !cmp.Equal(listed, wantListed) {
		t.Errorf("index.json lists %q, want %q\n%s", listed, wantListed, indexJSON)
	}
	rep, err := openStore(t, "oci-layout://"+dir, nil).Push(ctx, rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BlobsUploaded != 0 || rep.ManifestsPushed != 0 || rep.IndexPushed || rep.RecordPushed {
		t.Errorf("second push into the layout: %+v", rep)
	}
	if again, _ := os.ReadFile(filepath.Join(repo, "index.json")); !bytes.Equal(again, indexJSON) {
		t.Errorf("index.json changed on a second push")
	}
	// A changed package is refused in a layout too.
	var conflict *layout.ConflictError
	if _, err := s.Push(ctx, newRelease(t, foo, "1.0.0", "other", "linux_amd64").Release, ocistore.PushOptions{}); !errors.As(err, &conflict) {
		t.Errorf("changed package into a layout: %v, want a conflict", err)
	}

	// skopeo reads the layout: the raw index is the one pushed.
	raw := runSkopeo(t, "inspect", "--raw", "oci:"+repo+":1.0.0")
	if "sha256:"+sha256Hex(raw) != got.Index {
		t.Errorf("skopeo inspect --raw gives %s, the store %s:\n%s", "sha256:"+sha256Hex(raw), got.Index, raw)
	}

	// oras-go's own read-only layout store (what `oras cp
	// --from-oci-layout` reads with) copies the tag, with its provenance
	// referrer, into a registry, where the store reads the same release.
	srv := registrytest.Start(t)
	copyLayout(t, repo, "1.0.0", srv, "copied/hashicorp/foo")
	reg := openStore(t, "oci://"+srv.Host+"/copied/${namespace}/${type}", registryEnviron(t, srv))
	copied, found, err := reg.Release(ctx, foo, rel.Version)
	if err != nil || !found {
		t.Fatalf("Release after the copy: %v, %v", found, err)
	}
	copied.Repository = got.Repository
	if diff := cmp.Diff(got, copied); diff != "" {
		t.Errorf("the release copied (-layout +registry):\n%s", diff)
	}
	rc, err := reg.OpenArchive(ctx, foo, rel.Version, addrs.MustParsePlatform("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, rc), rel.zips["linux_amd64"]) {
		t.Error("the copied archive differs")
	}
	if rec, err := reg.ReadRecord(ctx, foo, rel.Version); err != nil {
		t.Errorf("ReadRecord after the copy: %v", err)
	} else if diff := cmp.Diff(*rel.Record, rec); diff != "" {
		t.Errorf("the copied record (-pushed +read):\n%s", diff)
	}

	// The oras CLI, when there is one ($TFMIRROR_ORAS or oras on PATH;
	// go install oras.land/oras/cmd/oras@latest), copies it too.
	t.Run("oras cp", func(t *testing.T) {
		bin := os.Getenv("TFMIRROR_ORAS")
		if bin == "" {
			var err error
			if bin, err = exec.LookPath("oras"); err != nil {
				if serverproc.Required() {
					t.Fatal("no oras CLI: scripts/test builds it and exports TFMIRROR_ORAS")
				}
				t.Skip("no oras CLI")
			}
		}
		cmd := exec.CommandContext(ctx, bin, "cp", "--recursive", "--from-oci-layout", repo+":1.0.0",
			"--to-ca-file", srv.CAFile, "--to-registry-config", srv.DockerConfig, srv.Host+"/oras/hashicorp/foo:1.0.0")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("oras cp: %v\n%s", err, out)
		}
		byOras := openStore(t, "oci://"+srv.Host+"/oras/${namespace}/${type}", registryEnviron(t, srv))
		viaOras, found, err := byOras.Release(ctx, foo, rel.Version)
		if err != nil || !found || viaOras.Index != got.Index {
			t.Fatalf("Release after oras cp: %+v, %v, %v", viaOras, found, err)
		}
		if _, err := byOras.ReadRecord(ctx, foo, rel.Version); err != nil {
			t.Errorf("ReadRecord after oras cp --recursive: %v", err)
		}
	})
}

// copyLayout copies tag of the layout at dir, with its referrers, into
// repository of srv using oras-go's read-only OCI layout store and
// oras.ExtendedCopy: a reader of the layout independent of the store's
// writer, as `oras cp -r --from-oci-layout` is.
func copyLayout(t *testing.T, dir, tag string, srv *registrytest.Server, repository string) {
	t.Helper()
	ctx := t.Context()
	src, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatalf("oras-go cannot read the layout: %v", err)
	}
	dst, err := remote.NewRepository(srv.Host + "/" + repository)
	if err != nil {
		t.Fatal(err)
	}
	dst.Client = &auth.Client{
		Client:     srv.CA.Client(),
		Credential: auth.StaticCredential(srv.Host, auth.Credential{Username: srv.Username, Password: srv.Password}),
	}
	if _, err := oras.ExtendedCopy(ctx, src, tag, dst, tag, oras.DefaultExtendedCopyOptions); err != nil {
		t.Fatalf("oras.ExtendedCopy from the layout: %v", err)
	}
}

// TestLayoutMissing: reading a layout that was never written creates
// nothing.
func TestLayoutMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	s := openStore(t, "oci-layout://"+dir, nil)
	foo := addrs.MustParseProvider("hashicorp/foo")
	if _, err := s.Versions(t.Context(), foo); !errors.Is(err, layout.ErrNotInMirror) {
		t.Errorf("Versions: %v", err)
	}
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	if _, found, err := s.Release(t.Context(), foo, rel.Version); found || err != nil {
		t.Errorf("Release: %v %v", found, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading created %s: %v", dir, err)
	}
}

// TestLayoutMissingPackage: a package the index lists but the layout
// does not hold is missing (fs.ErrNotExist), as for a tree.
func TestLayoutMissingPackage(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, "oci-layout://"+dir, nil)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo", "blobs", "sha256", sha256Hex(rel.zips["linux_amd64"]))
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenArchive(t.Context(), foo, rel.Version, addrs.MustParsePlatform("linux_amd64")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenArchive of a package the layout lost: %v, want fs.ErrNotExist", err)
	}
}

// TestLayoutLockWaitsWithinTheContext: a push into a layout whose lock
// another process holds waits for it, but no longer than its context
// allows (the lock used to wait without a limit), and never writes the
// oci-layout file it locks; once the lock is free the push goes through.
func TestLayoutLockWaitsWithinTheContext(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, "oci-layout://"+dir, nil)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	ociLayout := filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo", "oci-layout")
	before, err := os.ReadFile(ociLayout)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := atomicfile.Lock(t.Context(), ociLayout, 0) // another process's update
	if err != nil {
		t.Fatal(err)
	}
	rel2 := newRelease(t, foo, "1.1.0", "", "linux_amd64")
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := s.Push(ctx, rel2.Release, ocistore.PushOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "lock "+ociLayout) {
			t.Errorf("Push while the layout is locked: %v; want the lock's wait ended by the context", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Push still waiting for the lock 30s after its context ended")
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(t.Context(), rel2.Release, ocistore.PushOptions{}); err != nil {
		t.Fatalf("Push once the lock is free: %v", err)
	}
	if got, err := s.Versions(t.Context(), foo); err != nil || len(got) != 2 {
		t.Errorf("Versions = %v, %v; want both", got, err)
	}
	if after, err := os.ReadFile(ociLayout); err != nil || !bytes.Equal(after, before) {
		t.Errorf("oci-layout = %q, %v; want %q, unchanged by the lock", after, err, before)
	}
}

// TestUnreferredRecordIsPushedAgain: a push killed after storing the
// provenance manifest but before indexing it as the index's referrer
// leaves the manifest there and no record; the next push indexes it.
func TestUnreferredRecordIsPushedAgain(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, "oci-layout://"+dir, nil)
	foo := addrs.MustParseProvider("hashicorp/foo")
	rel := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	if _, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	indexFile := filepath.Join(dir, "registry.opentofu.org", "hashicorp", "foo", "index.json")
	data, err := os.ReadFile(indexFile)
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Manifests     []json.RawMessage `json:"manifests"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	var kept []json.RawMessage
	for _, m := range idx.Manifests {
		if !strings.Contains(string(m), ocistore.ArtifactTypeProvenance) {
			kept = append(kept, m)
		}
	}
	if len(kept) == len(idx.Manifests) {
		t.Fatalf("index.json lists no provenance artifact:\n%s", data)
	}
	idx.Manifests = kept
	if data, err = json.Marshal(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(indexFile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadRecord(t.Context(), foo, rel.Version); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ReadRecord of the unreferred record: %v, want fs.ErrNotExist", err)
	}

	rep, err := s.Push(t.Context(), rel.Release, ocistore.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.RecordPushed {
		t.Errorf("the second push did not push the record: %+v", rep)
	}
	if _, err := s.ReadRecord(t.Context(), foo, rel.Version); err != nil {
		t.Errorf("ReadRecord after the second push: %v", err)
	}
}

// TestLayoutPushMergesWithAnotherProcess: another process (another
// Store) tags the version between a push's reading of the tag and its
// writing of it; the push merges again with what that one tagged instead
// of dropping its platform.
func TestLayoutPushMergesWithAnotherProcess(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "layout")
	foo := addrs.MustParseProvider("hashicorp/foo")
	linux := newRelease(t, foo, "1.0.0", "", "linux_amd64")
	darwin := newRelease(t, foo, "1.0.0", "", "darwin_arm64")
	other, s := openStore(t, "oci-layout://"+dir, nil), openStore(t, "oci-layout://"+dir, nil)
	interleaved := false
	ocistore.SetLayoutFault(s, func(what string) error {
		if what == "index.json" && !interleaved {
			interleaved = true
			if _, err := other.Push(ctx, linux.Release, ocistore.PushOptions{Policy: layout.Repair}); err != nil {
				t.Errorf("the other process's push: %v", err)
			}
		}
		return nil
	})
	if _, err := s.Push(ctx, darwin.Release, ocistore.PushOptions{Policy: layout.Repair}); err != nil {
		t.Fatalf("Push: %v", err)
	}
	if !interleaved {
		t.Fatal("the push wrote no index.json: the test proves nothing")
	}
	reader := openStore(t, "oci-layout://"+dir, nil)
	rel, found, err := reader.Release(ctx, foo, linux.Version)
	if err != nil || !found {
		t.Fatalf("Release = %v, %v", found, err)
	}
	var got []string
	for _, a := range rel.Archives {
		got = append(got, a.Platform.String())
	}
	if want := []string{"darwin_arm64", "linux_amd64"}; !slices.Equal(got, want) {
		t.Errorf("the tag lists %q; want both processes' platforms %q", got, want)
	}
	rec, err := reader.ReadRecord(ctx, foo, linux.Version)
	if err != nil {
		t.Fatalf("ReadRecord: %v", err)
	}
	if len(rec.Provenance.Archives) != 2 {
		t.Errorf("the provenance records %d platforms; want both", len(rec.Provenance.Archives))
	}
}

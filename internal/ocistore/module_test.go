package ocistore_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/layout"
)

// testModule is a module package zip made in the test, in a file.
type testModule struct {
	path string
	data []byte
	sum  string // hex SHA-256
}

// moduleFiles is the content of a module package whose output greeting
// is greeting.
func moduleFiles(greeting string) map[string]string {
	return map[string]string{
		"main.tf":        fmt.Sprintf("output \"greeting\" {\n  value = %q\n}\n", greeting),
		"sub/outputs.tf": "output \"sub\" {\n  value = \"from sub\"\n}\n",
	}
}

// newModuleZip writes a deterministic zip of files (sorted, fixed times)
// into a file.
func newModuleZip(t testing.TB, files map[string]string) testModule {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
		h.SetMode(0o644)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "package.zip")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return testModule{path: path, data: buf.Bytes(), sum: sha256Hex(buf.Bytes())}
}

func pushModule(t testing.TB, s *ocistore.Store, m addrs.Module, v string, z testModule, overwrite bool) (ocistore.ModulePackage, error) {
	t.Helper()
	return s.PushModule(t.Context(), m, addrs.MustParseVersion(v), z.path, z.sum, int64(len(z.data)), overwrite)
}

func mustPushModule(t testing.TB, s *ocistore.Store, m addrs.Module, v string, z testModule) ocistore.ModulePackage {
	t.Helper()
	pkg, err := pushModule(t, s, m, v, z, false)
	if err != nil {
		t.Fatalf("PushModule %s %s: %v", m, v, err)
	}
	return pkg
}

// wantModuleManifest is the manifest of notes/oci.md §3, byte for byte,
// for a zip.
func wantModuleManifest(z testModule) string {
	return `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.opentofu.modulepkg",` +
		`"config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2,"data":"e30="},` +
		fmt.Sprintf(`"layers":[{"mediaType":"archive/zip","digest":"sha256:%s","size":%d}]}`, z.sum, len(z.data))
}

// moduleTemplate is the repository template of the module tests in srv.
func moduleTemplate(srv *registrytest.Server) string {
	return srv.Host + "/modules/${hostname}/${namespace}/${type}"
}

// writes returns the requests since from that are not reads.
func writes(t *testing.T, srv *registrytest.Server, from int) []string {
	t.Helper()
	var out []string
	for _, r := range srv.Requests(t)[from:] {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			out = append(out, r.Method+" "+r.URI)
		}
	}
	return out
}

func readModule(t *testing.T, s *ocistore.Store, m addrs.Module, v string) ocistore.ModulePackage {
	t.Helper()
	pkg, found, err := s.ReadModule(t.Context(), m, addrs.MustParseVersion(v))
	if err != nil || !found {
		t.Fatalf("ReadModule %s %s: %v, %v", m, v, found, err)
	}
	return pkg
}

func openModule(t *testing.T, s *ocistore.Store, m addrs.Module, pkg ocistore.ModulePackage) []byte {
	t.Helper()
	rc, err := s.OpenModule(t.Context(), m, pkg)
	if err != nil {
		t.Fatalf("OpenModule: %v", err)
	}
	return readAll(t, rc)
}

var netModule = addrs.MustParseModule("example.com/acme/network/aws")

// TestModulePushAndRead pushes a module package into a registry: the
// manifest is exactly the shape OpenTofu reads, the layer is the zip,
// ReadModule and OpenModule give it back, and pushing it again from
// another Store uploads and writes nothing and gives the same digest.
func TestModulePushAndRead(t *testing.T) {
	srv := registrytest.Start(t)
	env := registryEnviron(t, srv)
	s := openStore(t, "oci://"+moduleTemplate(srv), env)
	z := newModuleZip(t, moduleFiles("hello"))
	repoPath := "modules/example.com/acme/network/aws"
	repo := srv.Host + "/" + repoPath
	if got, err := s.ModuleRepository(netModule); err != nil || got != repo {
		t.Fatalf("ModuleRepository = %q, %v; want %q", got, err, repo)
	}

	uploads := srv.BlobUploads(t)
	pkg := mustPushModule(t, s, netModule, "1.0.0", z)
	want := ocistore.ModulePackage{
		Repository: repo, Tag: "1.0.0",
		Digest: "sha256:" + sha256Hex([]byte(wantModuleManifest(z))),
		Layer:  "sha256:" + z.sum, Size: int64(len(z.data)), Uploaded: 2,
	}
	if diff := cmp.Diff(want, pkg); diff != "" {
		t.Errorf("PushModule (-want +got):\n%s", diff)
	}
	if n := srv.BlobUploads(t) - uploads; n != 2 {
		t.Errorf("the registry logged %d blob uploads, want 2 (the empty config and the zip)", n)
	}

	// What the registry serves, read without the code under test.
	raw, hdr := rawGet(t, srv, "/v2/"+repoPath+"/manifests/1.0.0", ocispec.MediaTypeImageManifest)
	if string(raw) != wantModuleManifest(z) {
		t.Errorf("the manifest under 1.0.0:\n%s\nwant\n%s", raw, wantModuleManifest(z))
	}
	if ct, d := hdr.Get("Content-Type"), hdr.Get("Docker-Content-Digest"); ct != ocispec.MediaTypeImageManifest || d != pkg.Digest {
		t.Errorf("the manifest is served as %q with digest %s, want %q %s", ct, d, ocispec.MediaTypeImageManifest, pkg.Digest)
	}
	if blob, _ := rawGet(t, srv, "/v2/"+repoPath+"/blobs/"+pkg.Layer, ""); !bytes.Equal(blob, z.data) {
		t.Error("the layer is not the zip")
	}
	if blob, _ := rawGet(t, srv, "/v2/"+repoPath+"/blobs/"+ocispec.DescriptorEmptyJSON.Digest.String(), ""); string(blob) != "{}" {
		t.Errorf("the config blob is %q", blob)
	}

	// Read back.
	read := readModule(t, s, netModule, "1.0.0")
	want.Uploaded = 0
	if diff := cmp.Diff(want, read); diff != "" {
		t.Errorf("ReadModule (-want +got):\n%s", diff)
	}
	if !bytes.Equal(openModule(t, s, netModule, read), z.data) {
		t.Error("OpenModule gives other bytes")
	}
	if _, found, err := s.ReadModule(t.Context(), netModule, addrs.MustParseVersion("2.0.0")); found || err != nil {
		t.Errorf("ReadModule of a missing tag: %v, %v; want not found", found, err)
	}

	// Again, from a new Store: the same digest, nothing written.
	before := len(srv.Requests(t))
	uploads = srv.BlobUploads(t)
	again := mustPushModule(t, openStore(t, "oci://"+moduleTemplate(srv), env), netModule, "1.0.0", z)
	if again.Digest != pkg.Digest || again.Uploaded != 0 {
		t.Errorf("second push: %+v, want digest %s and nothing uploaded", again, pkg.Digest)
	}
	if w := writes(t, srv, before); len(w) > 0 || srv.BlobUploads(t) != uploads {
		t.Errorf("the second push wrote: %q", w)
	}

	// The same zip under another version: the blobs are found, only the
	// manifest is put, and it is the same manifest.
	before = len(srv.Requests(t))
	other := mustPushModule(t, s, netModule, "1.0.1+build.7", z)
	if other.Digest != pkg.Digest || other.Uploaded != 0 || other.Tag != "1.0.1_build.7" {
		t.Errorf("push under 1.0.1+build.7: %+v", other)
	}
	if w := writes(t, srv, before); !cmp.Equal(w, []string{"PUT /v2/" + repoPath + "/manifests/1.0.1_build.7"}) {
		t.Errorf("push of a known zip under a new version wrote %q, want only its manifest", w)
	}
}

// TestModuleTagConflict: a tag naming another package is refused before
// anything is written, naming the repository, the tag and both digests;
// overwrite re-points it.
func TestModuleTagConflict(t *testing.T) {
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+moduleTemplate(srv), registryEnviron(t, srv))
	a, b := newModuleZip(t, moduleFiles("a")), newModuleZip(t, moduleFiles("b"))
	pa := mustPushModule(t, s, netModule, "1.0.0", a)

	before := len(srv.Requests(t))
	_, err := pushModule(t, s, netModule, "1.0.0", b, false)
	var oe *ocistore.Error
	var conflict *layout.ConflictError
	if !errors.As(err, &oe) || !errors.As(err, &conflict) {
		t.Fatalf("PushModule of other content under a tag: %v, want an *ocistore.Error with a *layout.ConflictError", err)
	}
	t.Logf("refused: %v", err)
	bManifest := "sha256:" + sha256Hex([]byte(wantModuleManifest(b)))
	for _, want := range []string{"module example.com/acme/network/aws", pa.Repository + ":1.0.0", pa.Digest, pa.Layer, bManifest, "sha256:" + b.sum} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q", want)
		}
	}
	if w := writes(t, srv, before); len(w) > 0 {
		t.Errorf("the refused push wrote: %q", w)
	}
	if got := readModule(t, s, netModule, "1.0.0"); got.Digest != pa.Digest {
		t.Errorf("after the refusal the tag names %s, want %s", got.Digest, pa.Digest)
	}

	pb, err := pushModule(t, s, netModule, "1.0.0", b, true)
	if err != nil || pb.Digest != bManifest || pb.Uploaded != 1 {
		t.Fatalf("PushModule with overwrite: %+v, %v; want %s with the zip uploaded", pb, err, bManifest)
	}
	got := readModule(t, s, netModule, "1.0.0")
	if got.Digest != bManifest || !bytes.Equal(openModule(t, s, netModule, got), b.data) {
		t.Errorf("after overwrite: %+v", got)
	}

	// The same zip in another tool's manifest (oras push adds a title) is
	// the package published: kept, nothing written.
	rr := rawRepository(t, srv, "modules/example.com/acme/network/aws")
	titled := pushRawManifest(t, rr, "2.0.0", ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocistore.ArtifactTypeModule,
		Config: ocispec.DescriptorEmptyJSON,
		Layers: []ocispec.Descriptor{{MediaType: "archive/zip", Digest: digest.Digest("sha256:" + a.sum), Size: int64(len(a.data)),
			Annotations: map[string]string{ocispec.AnnotationTitle: "module-package.zip"}}},
	})
	before = len(srv.Requests(t))
	if kept, err := pushModule(t, s, netModule, "2.0.0", a, false); err != nil || kept.Digest != titled.String() || kept.Uploaded != 0 {
		t.Errorf("push onto another tool's manifest of the same zip: %+v, %v; want it kept (%s)", kept, err, titled)
	}
	if w := writes(t, srv, before); len(w) > 0 {
		t.Errorf("push onto the same zip wrote: %q", w)
	}
}

// rawRepository is repository of srv through oras-go, independently of
// the code under test.
func rawRepository(t *testing.T, srv *registrytest.Server, repository string) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(srv.Host + "/" + repository)
	if err != nil {
		t.Fatal(err)
	}
	r.Client = &auth.Client{
		Client:     srv.CA.Client(),
		Credential: auth.StaticCredential(srv.Host, auth.Credential{Username: srv.Username, Password: srv.Password}),
	}
	return r
}

// pushRawManifest pushes a manifest or index (its blobs must be there)
// under tag and returns its digest.
func pushRawManifest(t *testing.T, r *remote.Repository, tag string, v any) digest.Digest {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var probe struct {
		MediaType string `json:"mediaType"`
	}
	_ = json.Unmarshal(data, &probe)
	desc := content.NewDescriptorFromBytes(probe.MediaType, data)
	if err := r.PushReference(t.Context(), desc, bytes.NewReader(data), tag); err != nil {
		t.Fatalf("push %s as %s: %v", probe.MediaType, tag, err)
	}
	return desc.Digest
}

// TestModuleReadRefusesOtherShapes: a tag OpenTofu would not install a
// module package from is an error saying what is wrong.
func TestModuleReadRefusesOtherShapes(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+moduleTemplate(srv), registryEnviron(t, srv))
	z := newModuleZip(t, moduleFiles("x"))
	pkg := mustPushModule(t, s, netModule, "1.0.0", z)
	rr := rawRepository(t, srv, "modules/example.com/acme/network/aws")
	if _, err := oras.PushBytes(ctx, rr, ocispec.DescriptorEmptyJSON.MediaType, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	other, err := oras.PushBytes(ctx, rr, "archive/zip", []byte("PK not really"))
	if err != nil {
		t.Fatal(err)
	}
	zipLayer := ocispec.Descriptor{MediaType: "archive/zip", Digest: digest.Digest(pkg.Layer), Size: pkg.Size}
	manifest := func(artifactType string, layers ...ocispec.Descriptor) ocispec.Manifest {
		return ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			ArtifactType: artifactType, Config: ocispec.DescriptorEmptyJSON, Layers: layers}
	}
	pushRawManifest(t, rr, "2.0.0", ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		ArtifactType: ocistore.ArtifactTypeModule,
		Manifests:    []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(pkg.Digest), Size: int64(len(wantModuleManifest(z)))}}})
	pushRawManifest(t, rr, "3.0.0", manifest(ocistore.ArtifactTypeProviderTarget, zipLayer))
	pushRawManifest(t, rr, "4.0.0", manifest(ocistore.ArtifactTypeModule, zipLayer, other))
	pushRawManifest(t, rr, "5.0.0", manifest(ocistore.ArtifactTypeModule))

	for v, want := range map[string]string{
		"2.0.0": `names a "application/vnd.oci.image.index.v1+json", not an image manifest`,
		"3.0.0": `artifactType is "application/vnd.opentofu.provider-target", not "application/vnd.opentofu.modulepkg"`,
		"4.0.0": "has 2 archive/zip layers; OpenTofu requires exactly one",
		"5.0.0": "has no archive/zip layer",
	} {
		_, found, err := s.ReadModule(ctx, netModule, addrs.MustParseVersion(v))
		var oe *ocistore.Error
		if !errors.As(err, &oe) || !errors.Is(err, ocistore.ErrNotModule) || found {
			t.Errorf("ReadModule %s: %v, %v; want an *ocistore.Error wrapping ErrNotModule", v, found, err)
			continue
		}
		for _, s := range []string{want, "module example.com/acme/network/aws " + v, pkg.Repository + ":" + v} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("ReadModule %s: the error does not say %q:\n%v", v, s, err)
			}
		}
		// A push refuses to replace it, saying what it holds.
		if _, err := pushModule(t, s, netModule, v, z, false); !errors.As(err, new(*layout.ConflictError)) || !strings.Contains(err.Error(), want) {
			t.Errorf("PushModule onto %s: %v, want a conflict saying %q", v, err, want)
		}
	}
}

// TestModuleTemplateErrors: a template that gives no valid repository for
// a module, or one repository for two, is an error naming the module and
// the template, before anything is contacted; it does not stop providers.
func TestModuleTemplateErrors(t *testing.T) {
	ctx := t.Context()
	tmpl := "registry.invalid/m/${hostname}/${namespace}/${type}"
	s := openStore(t, "oci://"+tmpl, nil)
	upper := addrs.MustParseModule("example.com/Acme/Network/aws")
	z := newModuleZip(t, moduleFiles("x"))
	check := func(what string, err error, names ...string) {
		t.Helper()
		var oe *ocistore.Error
		if !errors.As(err, &oe) || !errors.Is(err, ocistore.ErrTemplate) {
			t.Errorf("%s: %v; want an *ocistore.Error wrapping ErrTemplate", what, err)
			return
		}
		for _, n := range names {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("%s: the error does not name %q:\n%v", what, n, err)
			}
		}
	}
	_, err := s.ModuleRepository(upper)
	check("ModuleRepository", err, "module example.com/Acme/Network/aws", tmpl, "registry.invalid/m/example.com/Acme/Network/aws")
	t.Logf("uppercase: %v", err)
	_, err = pushModule(t, s, upper, "1.0.0", z, false)
	check("PushModule", err, "module example.com/Acme/Network/aws", tmpl)
	_, _, err = s.ReadModule(ctx, upper, addrs.MustParseVersion("1.0.0"))
	check("ReadModule", err, "module example.com/Acme/Network/aws", tmpl)
	if _, err := s.Repository(addrs.MustParseProvider("hashicorp/foo")); err != nil {
		t.Errorf("a provider after a module's misfit: %v", err)
	}

	// One repository for two modules.
	flat := "registry.invalid/m/${namespace}"
	s = openStore(t, "oci://"+flat, nil)
	if _, err := s.ModuleRepository(netModule); err != nil {
		t.Fatal(err)
	}
	_, err = s.ModuleRepository(addrs.MustParseModule("example.com/acme/storage/aws"))
	check("two modules in one repository", err, flat, "registry.invalid/m/acme", "module example.com/acme/network/aws", "module example.com/acme/storage/aws")

	// A template that does not fit providers stops module pushes too.
	s = openStore(t, "oci://"+flat, nil)
	_, _ = s.Repository(addrs.MustParseProvider("hashicorp/foo"))
	_, _ = s.Repository(addrs.MustParseProvider("hashicorp/bar"))
	// (As for Push, this error is not an *ocistore.Error: it is about the
	// Store, not the module's repository.)
	if _, err = pushModule(t, s, netModule, "1.0.0", z, false); !errors.Is(err, ocistore.ErrTemplate) ||
		!strings.Contains(err.Error(), "module example.com/acme/network/aws 1.0.0") {
		t.Errorf("PushModule after a provider misfit: %v", err)
	}

	// In a layout uppercase is a directory name like any other.
	dir := t.TempDir()
	if got, err := openStore(t, "oci-layout://"+dir, nil).ModuleRepository(upper); err != nil || got != filepath.Join(dir, "example.com", "Acme", "Network", "aws") {
		t.Errorf("layout ModuleRepository = %q, %v", got, err)
	}
}

// TestModuleLayout pushes a module package into an OCI image layout: the
// same manifest as in a registry, read back, a second push changes
// nothing, a conflict is refused, and the oras CLI reads it.
func TestModuleLayout(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "layout")
	s := openStore(t, "oci-layout://"+dir, nil)
	repo := filepath.Join(dir, "example.com", "acme", "network", "aws")
	if _, found, err := s.ReadModule(ctx, netModule, addrs.MustParseVersion("1.0.0")); found || err != nil {
		t.Fatalf("ReadModule of an empty layout: %v, %v", found, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("reading created the layout: %v", err)
	}

	z := newModuleZip(t, moduleFiles("layout"))
	pkg := mustPushModule(t, s, netModule, "1.0.0", z)
	wantDigest := "sha256:" + sha256Hex([]byte(wantModuleManifest(z)))
	if pkg.Repository != repo || pkg.Digest != wantDigest || pkg.Uploaded != 2 {
		t.Errorf("PushModule into a layout: %+v, want %s in %s", pkg, wantDigest, repo)
	}
	raw, err := os.ReadFile(filepath.Join(repo, "blobs", "sha256", strings.TrimPrefix(pkg.Digest, "sha256:")))
	if err != nil || string(raw) != wantModuleManifest(z) {
		t.Errorf("the manifest blob: %q, %v", raw, err)
	}
	indexJSON, err := os.ReadFile(filepath.Join(repo, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(indexJSON, &idx); err != nil || len(idx.Manifests) != 1 ||
		idx.Manifests[0].Annotations[ocispec.AnnotationRefName] != "1.0.0" || idx.Manifests[0].Digest.String() != pkg.Digest ||
		idx.Manifests[0].ArtifactType != ocistore.ArtifactTypeModule {
		t.Errorf("index.json: %s (%v)", indexJSON, err)
	}
	read := readModule(t, s, netModule, "1.0.0")
	if read.Digest != pkg.Digest || read.Layer != pkg.Layer || !bytes.Equal(openModule(t, s, netModule, read), z.data) {
		t.Errorf("read back: %+v", read)
	}

	again := mustPushModule(t, openStore(t, "oci-layout://"+dir, nil), netModule, "1.0.0", z)
	if again.Uploaded != 0 || again.Digest != pkg.Digest {
		t.Errorf("second push into the layout: %+v", again)
	}
	if now, _ := os.ReadFile(filepath.Join(repo, "index.json")); !bytes.Equal(now, indexJSON) {
		t.Error("index.json changed on a second push")
	}
	if _, err := pushModule(t, s, netModule, "1.0.0", newModuleZip(t, moduleFiles("other")), false); !errors.As(err, new(*layout.ConflictError)) {
		t.Errorf("other content under a tag of a layout: %v, want a conflict", err)
	}

	missing := read
	missing.Layer = "sha256:" + sha256Hex([]byte("not pushed"))
	if _, err := s.OpenModule(ctx, netModule, missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenModule of a package the layout does not hold: %v, want fs.ErrNotExist", err)
	}

	t.Run("oras manifest fetch", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, orasCLI(t), "manifest", "fetch", "--oci-layout", repo+":1.0.0").Output()
		if err != nil {
			t.Fatalf("oras manifest fetch: %v", err)
		}
		if string(out) != wantModuleManifest(z) {
			t.Errorf("oras manifest fetch:\n%s\nwant\n%s", out, wantModuleManifest(z))
		}
	})
}

// orasCLI returns the oras CLI ($TFMIRROR_ORAS or oras on PATH), skipping
// without one unless it must run.
func orasCLI(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TFMIRROR_ORAS"); bin != "" {
		return bin
	}
	bin, err := exec.LookPath("oras")
	if err != nil {
		if serverproc.Required() {
			t.Fatal("no oras CLI: scripts/test builds it and exports TFMIRROR_ORAS")
		}
		t.Skip("no oras CLI")
	}
	return bin
}

// TestModuleTofuInit: tofu installs the pushed package from
// oci://HOST/REPOSITORY by tag and by digest (with //subdir), through the
// registry's TLS and htpasswd, and the module's output is the package's.
func TestModuleTofuInit(t *testing.T) {
	bin := os.Getenv("TFMIRROR_TOFU")
	if bin == "" {
		if serverproc.Required() {
			t.Fatal("TFMIRROR_TOFU is not set; run ./scripts/test")
		}
		t.Skip("TFMIRROR_TOFU is not set")
	}
	srv := registrytest.Start(t)
	s := openStore(t, "oci://"+moduleTemplate(srv), registryEnviron(t, srv))
	files := moduleFiles("hello from oci")
	z := newModuleZip(t, files)
	pkg := mustPushModule(t, s, netModule, "1.0.0", z)

	wd := t.TempDir()
	mainTF := fmt.Sprintf(`module "m" {
  source = "oci://%[1]s?tag=1.0.0"
}
module "d" {
  source = "oci://%[1]s//sub?digest=%[2]s"
}
output "greeting" {
  value = "${module.m.greeting} / ${module.d.sub}"
}
`, pkg.Repository, pkg.Digest)
	if err := os.WriteFile(filepath.Join(wd, "main.tf"), []byte(mainTF), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	cli := filepath.Join(home, "cli.tfrc")
	cliText := fmt.Sprintf("oci_default_credentials {\n  docker_style_config_files = [%q]\n}\n", srv.DockerConfig)
	if err := os.WriteFile(cli, []byte(cliText), 0o644); err != nil {
		t.Fatal(err)
	}
	tofu := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = wd
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TF_CLI_CONFIG_FILE=" + cli, "SSL_CERT_FILE=" + srv.CAFile,
			"CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1"}
		out, err := cmd.CombinedOutput()
		t.Logf("$ tofu %s (err %v)\n%s", strings.Join(args, " "), err, out)
		if err != nil {
			t.Fatalf("tofu %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tofu("init", "-input=false", "-no-color")
	for _, dir := range []string{"m", "d"} {
		for name, body := range files {
			got, err := os.ReadFile(filepath.Join(wd, ".terraform", "modules", dir, filepath.FromSlash(name)))
			if err != nil || string(got) != body {
				t.Errorf("module %s: %s = %q, %v; want %q", dir, name, got, err, body)
			}
		}
	}
	tofu("apply", "-input=false", "-no-color", "-auto-approve")
	if got := tofu("output", "-raw", "greeting"); got != "hello from oci / from sub" {
		t.Errorf("tofu output greeting = %q", got)
	}
}

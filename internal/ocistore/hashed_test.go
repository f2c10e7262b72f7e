package ocistore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/internal/testutil/registrytest"
	"github.com/tfmirror/tfmirror/mirror"
)

// bufSink is a mirror.Sink in memory.
type bufSink struct{ bytes.Buffer }

func (b *bufSink) Reset() error { b.Buffer.Reset(); return nil }

// orasRelease pushes, as `oras push --artifact-type ... --artifact-platform
// os/arch` and `oras manifest index create --artifact-type=...` make them
// (an image config naming the platform, the zip's title annotation), a
// platform manifest per zip and an index under tag; layers rewrites each
// manifest's layers (nil: the zip alone).
func orasRelease(t *testing.T, r *remote.Repository, tag string, zips map[string][]byte, layers func(zip ocispec.Descriptor) []ocispec.Descriptor) {
	t.Helper()
	ctx := t.Context()
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, ArtifactType: ocistore.ArtifactTypeProvider}
	for _, plat := range slices.Sorted(func(yield func(string) bool) {
		for p := range zips {
			if !yield(p) {
				return
			}
		}
	}) {
		os, arch, _ := strings.Cut(plat, "_")
		zip, err := oras.PushBytes(ctx, r, ocistore.MediaTypeZip, zips[plat])
		if err != nil {
			t.Fatal(err)
		}
		zip.Annotations = map[string]string{ocispec.AnnotationTitle: "terraform-provider-foo_1.0.0_" + plat + ".zip"}
		config, err := oras.PushBytes(ctx, r, ocispec.MediaTypeImageConfig, []byte(`{"architecture":"`+arch+`","os":"`+os+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		ls := []ocispec.Descriptor{zip}
		if layers != nil {
			ls = layers(zip)
		}
		m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			ArtifactType: ocistore.ArtifactTypeProviderTarget, Config: config, Layers: ls}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// Untagged, as `oras cp` of the version's tag leaves it.
		d, err := oras.PushBytes(ctx, r, ocispec.MediaTypeImageManifest, data)
		if err != nil {
			t.Fatal(err)
		}
		d.ArtifactType, d.Platform = ocistore.ArtifactTypeProviderTarget, &ocispec.Platform{OS: os, Architecture: arch}
		index.Manifests = append(index.Manifests, d)
	}
	pushRawManifest(t, r, tag, index)
}

// TestHashedReadsARegistryOrasFilled: a release pushed without tfmirror,
// as OpenTofu's documentation shows with oras, is read by its layers'
// digests: its platforms, each package's zh: hash and size, and the
// package itself, checked against its digest. It keeps no record, so a
// build falls back to its hashes.
func TestHashedReadsARegistryOrasFilled(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	foo := addrs.MustParseProvider("hashicorp/foo")
	zips := map[string][]byte{}
	for _, plat := range []string{"linux_amd64", "darwin_arm64"} {
		zips[plat] = makeZip(t, foo, "1.0.0", plat, "oras")
	}
	orasRelease(t, rawRepository(t, srv, "tf/registry.opentofu.org/hashicorp/foo"), "1.0.0", zips, nil)
	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	h := ocistore.NewHashed(s, 0)
	v := addrs.MustParseVersion("1.0.0")

	if vs, err := h.Versions(ctx, foo); err != nil || len(vs) != 1 || vs[0] != v {
		t.Fatalf("Versions: %v, %v; want [1.0.0]", vs, err)
	}
	plats, err := h.Platforms(ctx, foo, v)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(plats); got != "[darwin_arm64 linux_amd64]" {
		t.Errorf("Platforms: %s, want [darwin_arm64 linux_amd64]", got)
	}
	for plat, zip := range zips {
		pkg, err := h.Describe(ctx, foo, v, addrs.MustParsePlatform(plat))
		if err != nil {
			t.Fatalf("Describe %s: %v", plat, err)
		}
		if want := []hashing.Hash{hashing.Hash("zh:" + sha256Hex(zip))}; !slices.Equal(pkg.Hashes, want) || pkg.Size != int64(len(zip)) {
			t.Errorf("Describe %s: %q, %d bytes; want %q, %d bytes", plat, pkg.Hashes, pkg.Size, want, len(zip))
		}
		var sink bufSink
		if err := h.Fetch(ctx, pkg.Ref, &sink); err != nil {
			t.Fatalf("Fetch %s: %v", plat, err)
		}
		if !bytes.Equal(sink.Bytes(), zip) {
			t.Errorf("Fetch %s: not the zip pushed", plat)
		}
	}
	if _, err := h.Describe(ctx, foo, v, addrs.MustParsePlatform("windows_amd64")); !errors.Is(err, mirror.ErrPlatformUnavailable) {
		t.Errorf("Describe of a platform the index lacks: %v, want ErrPlatformUnavailable", err)
	}
	if err := h.Fetch(ctx, "registry.opentofu.org/hashicorp/foo 1.0.0 windows_amd64", &bufSink{}); err == nil {
		t.Error("Fetch of a package never described: no error")
	}
	if _, err := s.ReadRecord(ctx, foo, v); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRecord of a release oras pushed: %v, want fs.ErrNotExist (no provenance)", err)
	}
}

// TestHashedRefusesHostileReleases: what a registry says of a package is
// held to what OpenTofu installs from and to the bounds of a download,
// and the package to its layer's size and digest; each error names the
// provider, version, platform and repository.
func TestHashedRefusesHostileReleases(t *testing.T) {
	ctx := t.Context()
	srv := registrytest.Start(t)
	foo := addrs.MustParseProvider("hashicorp/foo")
	zip := makeZip(t, foo, "1.0.0", "linux_amd64", "oras")
	zips := map[string][]byte{"linux_amd64": zip}
	r := rawRepository(t, srv, "tf/registry.opentofu.org/hashicorp/foo")
	other, err := oras.PushBytes(ctx, r, ocistore.MediaTypeZip, []byte("PK another"))
	if err != nil {
		t.Fatal(err)
	}
	orasRelease(t, r, "1.0.0", zips, nil)
	orasRelease(t, r, "2.0.0", zips, func(z ocispec.Descriptor) []ocispec.Descriptor { return []ocispec.Descriptor{z, other} })
	orasRelease(t, r, "3.0.0", zips, func(z ocispec.Descriptor) []ocispec.Descriptor { z.Size = 0; return []ocispec.Descriptor{z} })
	orasRelease(t, r, "4.0.0", zips, func(z ocispec.Descriptor) []ocispec.Descriptor { z.Size++; return []ocispec.Descriptor{z} })
	pushRawManifest(t, r, "5.0.0", ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex,
		ArtifactType: "application/vnd.example.other"})

	s := openStore(t, "oci://"+template(srv), registryEnviron(t, srv))
	plat := addrs.MustParsePlatform("linux_amd64")
	repo := srv.Host + "/tf/registry.opentofu.org/hashicorp/foo"
	for _, tt := range []struct {
		version    string
		maxArchive int64
		describe   error  // what Describe wraps, nil: it succeeds
		want       string // what the error says
	}{
		{"1.0.0", int64(len(zip)) - 1, mirror.ErrTooLarge, "more than the"},
		{"2.0.0", 0, ocistore.ErrNotProvider, "has 2 archive/zip layers"},
		{"3.0.0", 0, ocistore.ErrNotProvider, "has a size of 0 bytes"},
		{"4.0.0", 0, nil, ""},
		{"5.0.0", 0, ocistore.ErrNotProvider, `artifactType is "application/vnd.example.other"`},
	} {
		t.Run(tt.version, func(t *testing.T) {
			v := addrs.MustParseVersion(tt.version)
			h := ocistore.NewHashed(s, tt.maxArchive)
			pkg, err := h.Describe(ctx, foo, v, plat)
			if tt.describe != nil {
				if !errors.Is(err, tt.describe) {
					t.Fatalf("Describe: %v, want an error wrapping %v", err, tt.describe)
				}
				for _, want := range []string{tt.want, "hashicorp/foo " + tt.version, repo} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Describe: the error does not say %q: %v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Describe: %v", err)
			}
			var sink bufSink
			err = h.Fetch(ctx, pkg.Ref, &sink)
			if err == nil {
				t.Fatalf("Fetch of a layer that is not what its descriptor says: no error (%d bytes)", sink.Len())
			}
			for _, want := range []string{"hashicorp/foo " + tt.version, "linux_amd64", repo} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Fetch: the error does not say %q: %v", want, err)
				}
			}
		})
	}
}

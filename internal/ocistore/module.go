package ocistore

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/layout"
)

// Module packages (notes/oci.md §3). OpenTofu installs a module from
// "oci://HOST/REPOSITORY?tag=TAG" when the tag names an image manifest
// (an index is refused) of ArtifactTypeModule with exactly one
// archive/zip layer, the module package's zip; other layers and the
// config are ignored. tfmirror pushes exactly that: the OCI empty config,
// the zip byte for byte as the one layer, no annotations, so the same
// zip gives the same manifest digest on every run and machine.

// ArtifactTypeModule is the artifactType of a module package's image
// manifest.
const ArtifactTypeModule = "application/vnd.opentofu.modulepkg"

// ErrNotModule: a tag holds something OpenTofu cannot install a module
// package from.
var ErrNotModule = errors.New("not an OpenTofu module package")

// ModulePackage is a module version's package pushed or found.
type ModulePackage struct {
	Repository string
	Tag        string // the canonical version, "+" as "_"
	Digest     string // of the image manifest, "sha256:..."
	Layer      string // digest of the archive/zip layer: "sha256:" + the zip's SHA-256
	Size       int64  // of the layer
	Uploaded   int    // blobs uploaded by this push (0 on a no-op)
}

// ModuleRepository returns the repository (host/path, no scheme) module m
// is pushed to: the store's repository template with ${hostname} = m.Host
// (punycode, as for providers), ${namespace} = m.Namespace and ${type} =
// m.Name + "/" + m.TargetSystem, validated as provider repositories are
// (an invalid result, or the repository of another provider or module,
// is an *Error naming the module and the template, wrapping ErrTemplate).
// For an oci-layout store it is the layout directory
// DIR/<host>/<namespace>/<name>/<system>.
//
// Unlike a provider's, a module's misfit is not recorded against the
// Store: module namespaces and names may hold uppercase letters, which no
// repository name can, and such a module fails alone.
func (s *Store) ModuleRepository(m addrs.Module) (string, error) {
	name, _, _, err := s.moduleRepository(m)
	return name, err
}

// moduleRepository is ModuleRepository with the registry host and path.
func (s *Store) moduleRepository(m addrs.Module) (name, host, path string, err error) {
	name, host, path, err = s.locate(m.Host.String(), m.Namespace, m.Name+"/"+m.TargetSystem)
	if err == nil {
		err = s.claim(name, m)
	}
	if err != nil {
		return "", "", "", &Error{Op: "find the repository of", Module: m, Repository: s.Location(), Err: templateError{err}}
	}
	return name, host, path, nil
}

// openModule returns m's repository.
func (s *Store) openModule(m addrs.Module) (target, string, error) {
	name, host, path, err := s.moduleRepository(m)
	if err != nil {
		return nil, "", err
	}
	t, err := s.target("module "+m.String(), name, host, path)
	return t, name, err
}

// moduleFail wraps err for an operation on m's repository.
func (s *Store) moduleFail(op string, m addrs.Module, version, repo string, err error) error {
	return s.explain(&Error{Op: op, Module: m, Version: version, Repository: repo}, err)
}

// PushModule pushes the module package zip at path (its hex SHA-256 and
// size given, already checked by the caller) as an OpenTofu module
// package under the version's tag: the blobs first (the OCI empty config
// and the zip, streamed from the file), those the repository holds
// already found and not uploaded again, then the manifest with the tag.
//
// A tag that names the package already (this manifest, or another image
// manifest of ArtifactTypeModule whose one zip layer is the same zip, as
// for providers) is left alone, and nothing is written. A tag that names
// anything else is refused, before anything is written, with an *Error
// wrapping a *layout.ConflictError naming the repository, the tag, and
// the digests of both manifests and both packages, unless overwrite: then
// the tag is re-pointed at this package.
//
// Once the template has not fitted a provider (see Repository), PushModule
// fails as Push does.
func (s *Store) PushModule(ctx context.Context, m addrs.Module, v addrs.Version, path, sha256Hex string, size int64, overwrite bool) (ModulePackage, error) {
	t, name, err := s.openModule(m)
	if err != nil {
		return ModulePackage{}, err
	}
	if err := s.misfitFor("module "+m.String(), v); err != nil {
		return ModulePackage{}, err
	}
	pkg := ModulePackage{Repository: name, Tag: Tag(v)}
	fail := func(err error) (ModulePackage, error) {
		return pkg, s.moduleFail("push", m, v.String(), name, err)
	}
	if err := checkTag(pkg.Tag); err != nil {
		return fail(err)
	}
	data, manifest, layer, err := moduleManifest(sha256Hex, size)
	if err != nil {
		return fail(err)
	}
	pkg.Digest, pkg.Layer, pkg.Size = manifest.Digest.String(), layer.Digest.String(), layer.Size
	defer s.tags.Lock(name + ":" + pkg.Tag)()
	held, err := moduleTagHolds(ctx, t, pkg, overwrite)
	if err != nil {
		return fail(err)
	}
	if held != "" {
		pkg.Digest = held
		return pkg, nil
	}
	uploads := []upload{emptyConfig(), {desc: layer, file: path}}
	for _, reupload := range []bool{false, true} {
		if pkg.Uploaded, _, err = s.uploadBlobs(ctx, t, uploads, s.parallelism(0), reupload); err != nil {
			return fail(err)
		}
		err = t.PushTagged(ctx, manifest, data, pkg.Tag)
		if !blobUnknown(err) {
			break // pushed, or refused for another reason; else upload every blob again (blobUnknown)
		}
	}
	if err != nil {
		return fail(fmt.Errorf("push the manifest %s as %s: %w", manifest.Digest, pkg.Tag, err))
	}
	return pkg, nil
}

// moduleManifest builds a module package's image manifest for its zip:
// deterministic bytes, its descriptor, and the zip layer's descriptor.
func moduleManifest(sha256Hex string, size int64) ([]byte, ocispec.Descriptor, ocispec.Descriptor, error) {
	d := digest.NewDigestFromEncoded(digest.SHA256, sha256Hex)
	if err := d.Validate(); err != nil {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, fmt.Errorf("the package's SHA-256 %s is not 64 lowercase hex digits: %w", excerpt.Quote(sha256Hex), err)
	}
	if size < 0 {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, fmt.Errorf("the package's size %d is negative", size)
	}
	layer := ocispec.Descriptor{MediaType: MediaTypeZip, Digest: d, Size: size}
	data, err := json.Marshal(ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactTypeModule,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
	})
	if err != nil {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, data)
	desc.ArtifactType = ArtifactTypeModule
	return data, desc, layer, nil
}

// moduleTagHolds reads what pkg's tag names: the digest of the manifest
// it names when that holds pkg's zip already, "" when the tag is missing
// (or is to be overwritten), and a conflict when it names anything else.
func moduleTagHolds(ctx context.Context, t target, pkg ModulePackage, overwrite bool) (string, error) {
	desc, err := t.Resolve(ctx, pkg.Tag)
	switch {
	case isNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("read the tag %s: %w", pkg.Tag, err)
	case desc.Digest.String() == pkg.Digest:
		return pkg.Digest, nil
	}
	layer, shapeErr := readModuleManifest(ctx, t, desc)
	switch {
	case shapeErr == nil && layer.Digest.String() == pkg.Layer:
		return desc.Digest.String(), nil // the same zip in another tool's manifest: kept
	case overwrite:
		return "", nil
	case shapeErr != nil && !errors.Is(shapeErr, ErrNotModule):
		return "", fmt.Errorf("read the manifest %s the tag %s names: %w", desc.Digest, pkg.Tag, shapeErr)
	}
	held := fmt.Sprintf("the package %s", layer.Digest)
	if shapeErr != nil {
		held = shapeErr.Error()
	}
	return "", &layout.ConflictError{Conflicts: []layout.Conflict{{
		Path: pkg.Repository + ":" + pkg.Tag,
		Message: fmt.Sprintf("the tag names the manifest %s (%s), this push brings the manifest %s (the package %s): "+
			"tfmirror never moves a published tag, clients may have installed what it names; remove the tag first if the new package is right",
			desc.Digest, held, pkg.Digest, pkg.Layer),
	}}}
}

// readModuleManifest reads the image manifest desc names as OpenTofu
// reads a module package, and returns its zip layer.
func readModuleManifest(ctx context.Context, t target, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the tag names a %s, not an image manifest (OpenTofu installs a module package only from an image manifest)",
			ErrNotModule, excerpt.Quote(desc.MediaType))
	}
	data, err := fetchManifest(ctx, t, desc)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer, err := zipLayerOf(data, ArtifactTypeModule, "module package manifest")
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the manifest %s: %w", ErrNotModule, desc.Digest, err)
	}
	return layer, nil
}

// ReadModule resolves the version's tag and returns its package, when the
// tag names an image manifest of ArtifactTypeModule with exactly one
// archive/zip layer (what OpenTofu installs). found is false when the tag
// does not exist. Anything else under the tag (an index, another
// artifactType, several zip layers) is an *Error wrapping ErrNotModule
// that says what is wrong. Nothing is created in a layout.
func (s *Store) ReadModule(ctx context.Context, m addrs.Module, v addrs.Version) (ModulePackage, bool, error) {
	t, name, err := s.openModule(m)
	if err != nil {
		return ModulePackage{}, false, err
	}
	pkg := ModulePackage{Repository: name, Tag: Tag(v)}
	desc, err := t.Resolve(ctx, pkg.Tag)
	if isNotFound(err) {
		return ModulePackage{}, false, nil
	}
	if err != nil {
		return ModulePackage{}, false, s.moduleFail("read", m, v.String(), name, err)
	}
	layer, err := readModuleManifest(ctx, t, desc)
	if err != nil {
		return ModulePackage{}, false, s.moduleFail("read", m, v.String(), name+":"+pkg.Tag, err)
	}
	pkg.Digest, pkg.Layer, pkg.Size = desc.Digest.String(), layer.Digest.String(), layer.Size
	return pkg, true, nil
}

// OpenModule streams the zip of a package ReadModule (or PushModule)
// returned from m's repository. Reading fails, instead of ending, if the
// bytes are not the layer's size and digest; a package the repository
// does not hold is an error wrapping fs.ErrNotExist.
func (s *Store) OpenModule(ctx context.Context, m addrs.Module, pkg ModulePackage) (io.ReadCloser, error) {
	t, name, err := s.openModule(m)
	if err != nil {
		return nil, err
	}
	version := pkg.Tag
	if v, ok := VersionOfTag(pkg.Tag); ok {
		version = v.String()
	}
	layer := ocispec.Descriptor{MediaType: MediaTypeZip, Digest: digest.Digest(pkg.Layer), Size: pkg.Size}
	if err := layer.Digest.Validate(); err != nil {
		return nil, s.moduleFail("read", m, version, name, fmt.Errorf("package %s: %w", excerpt.Quote(pkg.Layer), err))
	}
	rc, err := t.Fetch(ctx, layer)
	if isNotFound(err) {
		err = fmt.Errorf("the repository does not hold it: %w", fs.ErrNotExist)
	}
	if err != nil {
		return nil, s.moduleFail("read", m, version, name, fmt.Errorf("package %s: %w", pkg.Layer, err))
	}
	what := fmt.Sprintf("module %s %s package in %s", m, version, name)
	return &verifyingReader{rc: rc, h: sha256.New(), want: layer, what: what}, nil
}

// ModuleSource is the OpenTofu module source address of a module package
// this registry holds (or will hold once pushed): oci://REPOSITORY, the
// subdirectory as //SUBDIR, pinned to the manifest by ?digest=. The digest
// follows from the zip alone (the manifest is deterministic), so the
// address can be written before, and without, reading the registry. A
// layout has no address clients can reach.
func (s *Store) ModuleSource(m addrs.Module, sha256Hex string, size int64, subdir string) (string, error) {
	if s.tmpl == nil {
		return "", fmt.Errorf("an OCI image layout is not a registry clients can install module %s from", m.ForDisplay())
	}
	repo, err := s.ModuleRepository(m)
	if err != nil {
		return "", err
	}
	_, desc, _, err := moduleManifest(sha256Hex, size)
	if err != nil {
		return "", err
	}
	src := "oci://" + repo
	if subdir != "" {
		src += "//" + subdir
	}
	return src + "?digest=" + desc.Digest.String(), nil
}

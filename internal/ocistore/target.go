package ocistore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// target is one repository: of a registry, or an OCI image layout.
type target interface {
	// Exists reports whether a blob or manifest is there.
	Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error)
	// Push stores a blob or a manifest (by digest), verified against desc.
	Push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error
	// Fetch streams a blob or manifest.
	Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error)
	// BlobSize returns the size of a blob, if it is there.
	BlobSize(ctx context.Context, desc ocispec.Descriptor) (int64, bool, error)
	// Resolve returns the descriptor a tag names; an error that isNotFound
	// when there is no such tag (or repository).
	Resolve(ctx context.Context, tag string) (ocispec.Descriptor, error)
	// FetchIndex is Resolve, and the bytes of what the tag names when it
	// is an image index (as fetchManifest reads them): one request to a
	// registry.
	FetchIndex(ctx context.Context, tag string) (ocispec.Descriptor, []byte, error)
	// Tags lists every tag.
	Tags(ctx context.Context) ([]string, error)
	// PushTagged stores a manifest under tag in one step.
	PushTagged(ctx context.Context, desc ocispec.Descriptor, data []byte, tag string) error
	// Referrers lists the manifests of artifactType whose subject is desc.
	Referrers(ctx context.Context, desc ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error)
	// PushReferrer stores a manifest whose subject is subject so that
	// Referrers finds it, and removes the other referrers of subject with
	// the same artifactType (a record that was replaced).
	PushReferrer(ctx context.Context, desc ocispec.Descriptor, data []byte, subject ocispec.Descriptor) error
	// String names the repository as a location (oci://, oci-layout://).
	String() string
}

// remoteTarget is a repository of a registry.
type remoteTarget struct {
	repo *remote.Repository
	// maxTags bounds the tags Tags reads, maxPages the pages of a
	// listing (the repository stops after them too).
	maxTags, maxPages int
}

func (r *remoteTarget) String() string { return "oci://" + r.repo.Reference.String() }

func (r *remoteTarget) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	return r.repo.Exists(ctx, desc)
}

func (r *remoteTarget) Push(ctx context.Context, desc ocispec.Descriptor, rd io.Reader) error {
	return r.repo.Push(ctx, desc, rd)
}

func (r *remoteTarget) Fetch(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	return r.repo.Fetch(ctx, desc)
}

func (r *remoteTarget) BlobSize(ctx context.Context, desc ocispec.Descriptor) (int64, bool, error) {
	d, err := r.repo.Blobs().Resolve(ctx, desc.Digest.String())
	if isNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return d.Size, true, nil
}

func (r *remoteTarget) Resolve(ctx context.Context, tag string) (ocispec.Descriptor, error) {
	return r.repo.Resolve(ctx, tag)
}

func (r *remoteTarget) FetchIndex(ctx context.Context, tag string) (ocispec.Descriptor, []byte, error) {
	desc, rc, err := r.repo.FetchReference(ctx, tag)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	defer rc.Close()
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return desc, nil, nil
	}
	data, err := readManifest(rc, desc)
	return desc, data, err
}

// Tags reads the tag list page by page, and refuses one of more than
// maxTags tags or maxPages pages (ErrListTooLong) as soon as it knows.
func (r *remoteTarget) Tags(ctx context.Context) ([]string, error) {
	var out []string
	err := r.repo.Tags(ctx, "", func(tags []string) error {
		if len(out)+len(tags) > r.maxTags {
			return fmt.Errorf("%w: the tag list goes on past %d tags (the manifest's settings max_repository_tags raises the bound)", ErrListTooLong, r.maxTags)
		}
		out = append(out, tags...)
		return nil
	})
	if errors.Is(err, errdef.ErrTooManyPages) {
		return nil, fmt.Errorf("%w: the tag list goes on past %d pages (%d tags so far; the manifest's settings max_list_pages raises the bound)", ErrListTooLong, r.maxPages, len(out))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *remoteTarget) PushTagged(ctx context.Context, desc ocispec.Descriptor, data []byte, tag string) error {
	return r.repo.PushReference(ctx, desc, bytes.NewReader(data), tag)
}

// Referrers lists the referrers page by page, and refuses more than
// maxReferrers of them or maxPages pages (ErrListTooLong).
func (r *remoteTarget) Referrers(ctx context.Context, desc ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	err := r.repo.Referrers(ctx, desc, artifactType, func(refs []ocispec.Descriptor) error {
		if len(out)+len(refs) > maxReferrers {
			return fmt.Errorf("%w: %s has more than %d referrers", ErrListTooLong, desc.Digest, maxReferrers)
		}
		out = append(out, refs...)
		return nil
	})
	if errors.Is(err, errdef.ErrTooManyPages) {
		return nil, fmt.Errorf("%w: the referrers of %s go on past %d pages", ErrListTooLong, desc.Digest, r.maxPages)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *remoteTarget) PushReferrer(ctx context.Context, desc ocispec.Descriptor, data []byte, subject ocispec.Descriptor) error {
	// The repository indexes the subject itself: through the registry's
	// referrers API, or, where there is none (distribution 2.8), in the
	// referrers tag "sha256-<hex of the subject>".
	if err := r.repo.Push(ctx, desc, bytes.NewReader(data)); err != nil {
		return err
	}
	refs, err := r.Referrers(ctx, subject, desc.ArtifactType)
	if err != nil {
		return err
	}
	for _, old := range refs {
		if old.Digest == desc.Digest {
			continue
		}
		// Deleting a manifest also removes it from the referrers tag.
		if err := r.repo.Delete(ctx, old); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete the replaced %s artifact %s (until it is deleted, two refer to %s): %w", desc.ArtifactType, old.Digest, subject.Digest, err)
		}
	}
	return nil
}

// fetchManifest reads a manifest of at most MaxManifestBytes, checking
// its size and digest.
func fetchManifest(ctx context.Context, t target, desc ocispec.Descriptor) ([]byte, error) {
	if err := checkManifestSize(desc); err != nil {
		return nil, err
	}
	return fetchAll(ctx, t, desc)
}

// readManifest is fetchManifest of a manifest streamed from rc.
func readManifest(rc io.Reader, desc ocispec.Descriptor) ([]byte, error) {
	if err := checkManifestSize(desc); err != nil {
		return nil, err
	}
	return readAll(rc, desc)
}

func checkManifestSize(desc ocispec.Descriptor) error {
	if desc.Size > MaxManifestBytes || desc.Size < 0 {
		return fmt.Errorf("manifest %s has %d bytes, more than the %d OpenTofu reads", desc.Digest, desc.Size, MaxManifestBytes)
	}
	return nil
}

// fetchAll reads content, checking its size and digest.
func fetchAll(ctx context.Context, t target, desc ocispec.Descriptor) ([]byte, error) {
	rc, err := t.Fetch(ctx, desc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return readAll(rc, desc)
}

func readAll(rc io.Reader, desc ocispec.Descriptor) ([]byte, error) {
	data, err := content.ReadAll(rc, desc)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", desc.Digest, err)
	}
	return data, nil
}

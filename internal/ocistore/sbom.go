package ocistore

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/layout"
)

const (
	// ArtifactTypeSBOM is the artifactType of a package's SBOM artifact:
	// an image manifest whose subject is the platform's image manifest
	// and whose one layer is the CycloneDX JSON document a tree keeps
	// beside the archive (layout.SBOMPath). OpenTofu ignores it.
	ArtifactTypeSBOM = "application/vnd.cyclonedx+json"
	// MediaTypeSBOM is the media type of its layer.
	MediaTypeSBOM = "application/vnd.cyclonedx+json"
)

// sbomPush is a package's SBOM artifact to push, referring to the
// platform's manifest.
type sbomPush struct {
	plat     addrs.Platform
	manifest []byte
	desc     ocispec.Descriptor
	layer    blob
	subject  ocispec.Descriptor
}

// sbomArtifact builds the SBOM artifact of a package, referring to its
// platform's manifest (subject); the same bytes give the same digests.
func sbomArtifact(p addrs.Provider, v addrs.Version, plat addrs.Platform, data []byte, subject ocispec.Descriptor) (sbomPush, error) {
	layer := content.NewDescriptorFromBytes(MediaTypeSBOM, data)
	layer.Annotations = map[string]string{ocispec.AnnotationTitle: layout.SBOMName(p, v, plat)}
	subj := ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactTypeSBOM,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
		Subject:      &subj,
	}
	manifest, err := json.Marshal(m)
	if err != nil {
		return sbomPush{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, manifest)
	desc.ArtifactType = ArtifactTypeSBOM
	return sbomPush{plat: plat, manifest: manifest, desc: desc, layer: blob{desc: layer, data: data}, subject: subj}, nil
}

// planSBOMs plans the SBOM artifact of every archive of r that brings
// one and that the record describes, referring to the manifest the index
// lists for its platform (subjects), and names it in the record.
func planSBOMs(r layout.Release, rec *layout.Record, subjects map[addrs.Platform]ocispec.Descriptor) ([]sbomPush, error) {
	if rec == nil {
		return nil, nil
	}
	var out []sbomPush
	for _, a := range r.Archives {
		entry, recorded := rec.Provenance.Archives[a.Platform.String()]
		subject, listed := subjects[a.Platform]
		if a.SBOM == nil || !recorded || !listed {
			continue
		}
		push, err := sbomArtifact(r.Provider, r.Version, a.Platform, a.SBOM, subject)
		if err != nil {
			return nil, err
		}
		out = append(out, push)
		entry.SBOM = layout.SBOMName(r.Provider, r.Version, a.Platform)
		rec.Provenance.Archives[a.Platform.String()] = entry
	}
	return out, nil
}

// pushSBOMs pushes the planned SBOM artifacts (their layers went up with
// the other blobs), each as the one SBOM referrer of its platform's
// manifest, unless it is that already. A manifest stored but not yet a
// referrer (a push stopped in between, in an image layout) is pushed
// again. It returns how many it pushed and found.
func pushSBOMs(ctx context.Context, t target, sboms []sbomPush) (pushed, present int, err error) {
	for _, sb := range sboms {
		refs, err := t.Referrers(ctx, sb.subject, ArtifactTypeSBOM)
		if err != nil {
			return pushed, present, fmt.Errorf("list the referrers of the %s manifest %s: %w", sb.plat, sb.subject.Digest, err)
		}
		if len(refs) == 1 && refs[0].Digest == sb.desc.Digest {
			present++
			continue
		}
		if err := t.PushReferrer(ctx, sb.desc, sb.manifest, sb.subject); err != nil {
			return pushed, present, fmt.Errorf("push the %s SBOM manifest %s: %w", sb.plat, sb.desc.Digest, err)
		}
		pushed++
	}
	return pushed, present, nil
}

// ReadSBOM returns the SBOM of a package: the layer of the SBOM artifact
// referring to the manifest the version's tag lists for the platform. A
// missing tag, platform or SBOM is an error wrapping fs.ErrNotExist.
func (s *Store) ReadSBOM(ctx context.Context, p addrs.Provider, v addrs.Version, plat addrs.Platform) ([]byte, error) {
	r, err := s.readTagged(ctx, p, v)
	if err != nil {
		return nil, err
	}
	entry, ok := r.entries[plat]
	if !ok {
		return nil, s.fail("read the SBOM of", p, v.String(), r.ref, fmt.Errorf("no %s package: %w", plat, fs.ErrNotExist))
	}
	data, err := readSBOM(ctx, r.t, entry)
	if err != nil {
		return nil, s.fail("read the SBOM of", p, v.String(), r.ref, fmt.Errorf("%s: %w", plat, err))
	}
	return data, nil
}

func readSBOM(ctx context.Context, t target, entry ocispec.Descriptor) ([]byte, error) {
	refs, err := t.Referrers(ctx, entry, ArtifactTypeSBOM)
	if err != nil {
		return nil, fmt.Errorf("list the referrers of %s: %w", entry.Digest, err)
	}
	switch len(refs) {
	case 0:
		return nil, fmt.Errorf("no %s artifact refers to the manifest %s: %w", ArtifactTypeSBOM, entry.Digest, fs.ErrNotExist)
	case 1:
	default:
		return nil, fmt.Errorf("%d SBOM artifacts refer to the manifest %s; expected one", len(refs), entry.Digest)
	}
	data, err := fetchManifest(ctx, t, refs[0])
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("SBOM manifest %s: %w", refs[0].Digest, excerpt.Error(err))
	}
	if m.ArtifactType != ArtifactTypeSBOM || len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeSBOM {
		return nil, fmt.Errorf("SBOM manifest %s: not one %s layer", refs[0].Digest, MediaTypeSBOM)
	}
	layer := m.Layers[0]
	if layer.Size > layout.MaxSBOMBytes || layer.Size < 0 {
		return nil, fmt.Errorf("SBOM layer %s has %d bytes, more than %d", layer.Digest, layer.Size, layout.MaxSBOMBytes)
	}
	return fetchAll(ctx, t, layer)
}

package ocistore

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/layout"
)

// What OpenTofu reads (notes/oci.md §1.3), and what tfmirror adds.
const (
	// ArtifactTypeProvider is the artifactType of a version's image index.
	ArtifactTypeProvider = "application/vnd.opentofu.provider"
	// ArtifactTypeProviderTarget is the artifactType of a platform's image
	// manifest, in the manifest and in its index entry.
	ArtifactTypeProviderTarget = "application/vnd.opentofu.provider-target"
	// MediaTypeZip is the media type of the layer holding the package.
	MediaTypeZip = "archive/zip"

	// ArtifactTypeProvenance is the artifactType of tfmirror's provenance
	// artifact: an image manifest whose subject is a version's index and
	// whose layers are the upstream SHA256SUMS, its signature (if the
	// release has one) and the provenance record, in that order. OpenTofu
	// ignores it.
	ArtifactTypeProvenance = "application/vnd.tfmirror.provenance.v1"
	// MediaTypeSums is the media type of the upstream SHA256SUMS layer.
	MediaTypeSums = "application/vnd.tfmirror.sha256sums"
	// MediaTypeSignature is the media type of the detached OpenPGP
	// signature of SHA256SUMS (RFC 3156).
	MediaTypeSignature = "application/pgp-signature"
	// MediaTypeProvenance is the media type of the provenance record
	// (layout.Provenance, encoded as layout encodes it).
	MediaTypeProvenance = "application/vnd.tfmirror.provenance.v1+json"

	// MaxManifestBytes is the largest manifest read; OpenTofu refuses
	// larger ones.
	MaxManifestBytes = 4 << 20
)

// Tag is the tag of a version: its canonical string with "+" as "_"
// (OCI tags cannot hold "+"), as OpenTofu resolves it.
func Tag(v addrs.Version) string { return strings.ReplaceAll(v.String(), "+", "_") }

// VersionOfTag is the version a tag names, if it is the canonical tag of
// one. OpenTofu also takes "1", "1.2" or "01.2.3" for versions, which then
// resolve to a tag that does not exist: such tags are ignored here, and
// never written.
func VersionOfTag(tag string) (addrs.Version, bool) {
	v, err := addrs.ParseVersion(strings.ReplaceAll(tag, "_", "+"))
	if err != nil || Tag(v) != tag {
		return addrs.Version{}, false
	}
	return v, true
}

// platformManifest builds a platform's image manifest for a zip layer, and
// its entry in the index. The bytes are deterministic: the same package
// of the same release always gives the same digest.
func platformManifest(p addrs.Provider, v addrs.Version, plat addrs.Platform, zipDigest digest.Digest, size int64) ([]byte, ocispec.Descriptor, ocispec.Descriptor, error) {
	layer := ocispec.Descriptor{
		MediaType:   MediaTypeZip,
		Digest:      zipDigest,
		Size:        size,
		Annotations: map[string]string{ocispec.AnnotationTitle: layout.ArchiveName(p, v, plat)},
	}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactTypeProviderTarget,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       []ocispec.Descriptor{layer},
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, ocispec.Descriptor{}, ocispec.Descriptor{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, data)
	desc.ArtifactType = ArtifactTypeProviderTarget
	desc.Platform = &ocispec.Platform{OS: plat.OS, Architecture: plat.Arch}
	return data, desc, layer, nil
}

// encodeIndex renders a version's index with its entries sorted by
// platform (then digest), keeping annotations an existing index had.
func encodeIndex(entries []ocispec.Descriptor, annotations map[string]string) ([]byte, ocispec.Descriptor, error) {
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b ocispec.Descriptor) int {
		if c := strings.Compare(platformKey(a), platformKey(b)); c != 0 {
			return c
		}
		return strings.Compare(string(a.Digest), string(b.Digest))
	})
	idx := ocispec.Index{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageIndex,
		ArtifactType: ArtifactTypeProvider,
		Manifests:    entries,
		Annotations:  annotations,
	}
	data, err := json.Marshal(idx)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageIndex, data)
	desc.ArtifactType = ArtifactTypeProvider
	return data, desc, nil
}

// platformKey orders index entries.
func platformKey(d ocispec.Descriptor) string {
	if d.Platform == nil {
		return ""
	}
	return d.Platform.OS + "_" + d.Platform.Architecture + "/" + d.Platform.Variant + "/" + d.Platform.OSVersion
}

// targetPlatform is the platform an index entry installs for, as OpenTofu
// selects it: a provider-target image manifest with a platform and no
// os.version.
func targetPlatform(d ocispec.Descriptor) (addrs.Platform, bool) {
	if d.ArtifactType != ArtifactTypeProviderTarget || d.MediaType != ocispec.MediaTypeImageManifest ||
		d.Platform == nil || d.Platform.OSVersion != "" {
		return addrs.Platform{}, false
	}
	return addrs.Platform{OS: d.Platform.OS, Arch: d.Platform.Architecture}, true
}

// decodeIndex parses a version's index and checks what OpenTofu checks.
func decodeIndex(data []byte) (ocispec.Index, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return idx, fmt.Errorf("the index is not JSON: %w", excerpt.Error(err))
	}
	if idx.MediaType != ocispec.MediaTypeImageIndex {
		return idx, fmt.Errorf("the index's mediaType is %s, not %q", excerpt.Quote(idx.MediaType), ocispec.MediaTypeImageIndex)
	}
	if idx.ArtifactType != ArtifactTypeProvider {
		return idx, fmt.Errorf("the index's artifactType is %s, not %q", excerpt.Quote(idx.ArtifactType), ArtifactTypeProvider)
	}
	return idx, nil
}

// zipLayer returns the one archive/zip layer of a platform's manifest,
// checking what OpenTofu checks.
func zipLayer(data []byte) (ocispec.Descriptor, error) {
	return zipLayerOf(data, ArtifactTypeProviderTarget, "platform manifest")
}

// zipLayerOf returns the one archive/zip layer of an image manifest of
// artifactType, checking what OpenTofu checks; what names the manifest in
// an error.
func zipLayerOf(data []byte, artifactType, what string) (ocispec.Descriptor, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("the %s is not JSON: %w", what, excerpt.Error(err))
	}
	if m.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, fmt.Errorf("the %s's mediaType is %s, not %q", what, excerpt.Quote(m.MediaType), ocispec.MediaTypeImageManifest)
	}
	if m.ArtifactType != artifactType {
		return ocispec.Descriptor{}, fmt.Errorf("the %s's artifactType is %s, not %q", what, excerpt.Quote(m.ArtifactType), artifactType)
	}
	var zips []ocispec.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == MediaTypeZip {
			zips = append(zips, l)
		}
	}
	switch {
	case len(zips) == 0:
		return ocispec.Descriptor{}, fmt.Errorf("the %s has no %s layer", what, MediaTypeZip)
	case len(zips) > 1:
		return ocispec.Descriptor{}, fmt.Errorf("the %s has %d %s layers; OpenTofu requires exactly one", what, len(zips), MediaTypeZip)
	}
	if zips[0].Digest.Algorithm() != digest.SHA256 || zips[0].Digest.Validate() != nil {
		return ocispec.Descriptor{}, fmt.Errorf("the package layer's digest %s is not a sha256 digest", excerpt.Quote(string(zips[0].Digest)))
	}
	return zips[0], nil
}

// zhOf is the zh: hash of a sha256 layer digest.
func zhOf(d digest.Digest) hashing.Hash { return hashing.Hash(hashing.SchemeZH + d.Encoded()) }

// digestOfZH is the layer digest of a zh: hash.
func digestOfZH(h hashing.Hash) (digest.Digest, bool) {
	hexSum, ok := strings.CutPrefix(string(h), hashing.SchemeZH)
	if !ok {
		return "", false
	}
	d := digest.NewDigestFromEncoded(digest.SHA256, hexSum)
	return d, d.Validate() == nil
}

// provenanceArtifact builds the provenance artifact of a record, referring
// to the index subject: its manifest, its descriptor and its layers'
// contents (in manifest order).
func provenanceArtifact(p addrs.Provider, v addrs.Version, rec layout.Record, subject ocispec.Descriptor) ([]byte, ocispec.Descriptor, []blob, error) {
	prov := rec.Provenance
	if prov.SigningKeys == nil {
		prov.SigningKeys = []string{}
	}
	provJSON, err := layout.Encode(prov)
	if err != nil {
		return nil, ocispec.Descriptor{}, nil, err
	}
	base := fmt.Sprintf("terraform-provider-%s_%s_", p.Type, v.String())
	var blobs []blob
	add := func(mediaType, name string, data []byte) {
		d := content.NewDescriptorFromBytes(mediaType, data)
		d.Annotations = map[string]string{ocispec.AnnotationTitle: base + name}
		blobs = append(blobs, blob{desc: d, data: data})
	}
	add(MediaTypeSums, "SHA256SUMS", rec.Sums)
	if rec.Signature != nil {
		add(MediaTypeSignature, "SHA256SUMS.sig", rec.Signature)
	}
	add(MediaTypeProvenance, "provenance.json", provJSON)
	layers := make([]ocispec.Descriptor, len(blobs))
	for i, b := range blobs {
		layers[i] = b.desc
	}
	subj := ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactTypeProvenance,
		Config:       ocispec.DescriptorEmptyJSON,
		Layers:       layers,
		Subject:      &subj,
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, ocispec.Descriptor{}, nil, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, data)
	desc.ArtifactType = ArtifactTypeProvenance
	return data, desc, blobs, nil
}

// blob is content held in memory to push.
type blob struct {
	desc ocispec.Descriptor
	data []byte
}

// decodeProvenanceManifest returns the layers of a provenance artifact:
// SHA256SUMS, the signature (zero when there is none) and the record.
func decodeProvenanceManifest(data []byte) (sums, sig, prov ocispec.Descriptor, err error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return sums, sig, prov, fmt.Errorf("the provenance manifest is not JSON: %w", excerpt.Error(err))
	}
	if m.ArtifactType != ArtifactTypeProvenance {
		return sums, sig, prov, fmt.Errorf("the provenance manifest's artifactType is %s, not %q", excerpt.Quote(m.ArtifactType), ArtifactTypeProvenance)
	}
	for _, l := range m.Layers {
		var slot *ocispec.Descriptor
		switch l.MediaType {
		case MediaTypeSums:
			slot = &sums
		case MediaTypeSignature:
			slot = &sig
		case MediaTypeProvenance:
			slot = &prov
		default:
			continue
		}
		if slot.Digest != "" {
			return sums, sig, prov, fmt.Errorf("the provenance manifest has two %s layers", l.MediaType)
		}
		*slot = l
	}
	if sums.Digest == "" || prov.Digest == "" {
		return sums, sig, prov, fmt.Errorf("the provenance manifest lacks its %s or %s layer", MediaTypeSums, MediaTypeProvenance)
	}
	return sums, sig, prov, nil
}

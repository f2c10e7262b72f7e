package ocistore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/notify"
	"github.com/tfmirror/tfmirror/internal/syncx"
	"github.com/tfmirror/tfmirror/layout"
)

// PushOptions say how a push merges with what the repository holds.
type PushOptions struct {
	// Policy decides about the kept origin files, as for a tree: under
	// layout.Refuse (the zero value) a provenance record that differs from
	// the one the repository keeps for the version (other SHA256SUMS,
	// signature, signing key, or another package recorded for a platform)
	// is a conflict, and the same signing key in another form (re-issued)
	// keeps the repository's (layout.Provenance.SameSigner); under layout.Repair the release's record
	// replaces it (platforms it does not name are kept). Packages are
	// never replaced under either policy.
	Policy layout.Policy
	// Overwrite replaces whatever differs: a platform whose package under
	// the tag has other bytes, a tag that holds something other than a
	// provider index, a differing record. Only for a person who decided
	// that the release's packages are the right ones: clients may have
	// locked the old ones.
	Overwrite bool
	// Parallel bounds concurrent uploads; 0: Config.Parallel.
	Parallel int
}

// PushReport counts what a push did.
type PushReport struct {
	Repository string
	Tag        string
	// Index is the digest of the index under the tag after the push.
	Index string
	// BlobsUploaded and BlobsPresent count the blobs (packages, the empty
	// config, the provenance files) uploaded, and found in the repository
	// already.
	BlobsUploaded int
	BlobsPresent  int
	// ManifestsPushed and ManifestsPresent count the platform manifests
	// and the provenance manifest.
	ManifestsPushed  int
	ManifestsPresent int
	// IndexPushed reports whether the tag was written (created, or changed
	// to add platforms).
	IndexPushed bool
	// RecordPushed reports whether a provenance artifact was written.
	RecordPushed bool
}

// maxPushAttempts bounds how often a push is planned again because
// another writer changed the tag meanwhile.
const maxPushAttempts = 5

// Push publishes a release into its provider's repository, in the order
// registries require and clients expect: the blobs (each platform's
// byte-identical archive, streamed from its staged file, and the OCI
// empty config), then one image manifest per platform, then the index by
// its digest (untagged), then the provenance artifact referring to the
// index (SHA256SUMS, signature and provenance from r.Record, so the
// release can be verified from the registry alone), and only then the
// version's tag. A push stopped at any point (killed, or a write refused)
// leaves no tag naming an index without its provenance: the tag is
// missing, or left as it was, and the next push completes it from what
// is there. In an OCI image layout the tag and the provenance enter
// index.json in one atomic write, made only if the tag still names what
// the push read; when another process moved it meanwhile, the push
// merges again with what that one tagged.
//
// A tag that holds the release's packages but has no provenance artifact
// (left so by a version of tfmirror that tagged first, or by another
// tool) gets the artifact, and nothing else is written.
//
// Blobs and manifests the repository already holds are found (HEAD) and
// not uploaded again. The index keeps the platforms (and any other
// entries) already under the tag and adds the release's; a tag that
// holds the same package for every platform of the release is left as
// it is. A platform whose package under the tag has other bytes refuses
// the whole push before anything is written, with a *layout.ConflictError
// naming the repository, the tag and both digests, unless
// opts.Overwrite. The same release gives the same digests on every run.
//
// An archive without a staged file (Staged == "") must be in the
// repository already, named by a zh: hash among its Hashes.
//
// With r.VerifyExisting, the archive blobs the repository holds already
// are read again first, and one whose bytes are not its digest is
// replaced (see reverify.go).
//
// Once the template has not fitted a provider (see Repository), every
// push fails with that error (an ErrTemplate) before anything is
// contacted.
//
// Every error names the provider, the version and the repository.
func (s *Store) Push(ctx context.Context, r layout.Release, opts PushOptions) (PushReport, error) {
	t, name, err := s.open(r.Provider)
	if err != nil {
		return PushReport{}, fmt.Errorf("push %s %s: %w", r.Provider, r.Version, err)
	}
	if err := s.misfitFor(r.Provider.String(), r.Version); err != nil {
		return PushReport{}, err
	}
	ver := r.Version.String()
	rep := PushReport{Repository: name, Tag: Tag(r.Version)}
	if err := checkTag(rep.Tag); err != nil {
		return rep, s.fail("push", r.Provider, ver, name, err)
	}
	defer s.tags.Lock(name + ":" + rep.Tag)()
	s.mu.Lock()
	delete(s.untagged, name+":"+rep.Tag)
	s.mu.Unlock()
	pkgs, err := s.packages(ctx, t, r)
	if err != nil {
		return rep, s.fail("push", r.Provider, ver, name, err)
	}
	if r.VerifyExisting {
		if err := s.reverify(ctx, t, name, pkgs); err != nil {
			return rep, s.fail("push", r.Provider, ver, name, err)
		}
	}
	reupload := false
	for attempt := 0; ; attempt++ {
		pl, err := s.plan(ctx, t, name, r, pkgs, opts)
		if err != nil {
			return rep, s.fail("push", r.Provider, ver, name, err)
		}
		if len(pl.conflicts) > 0 {
			return rep, s.fail("push", r.Provider, ver, name, &layout.ConflictError{Conflicts: pl.conflicts})
		}
		err = s.execute(ctx, t, pl, opts, &rep, reupload)
		if errors.Is(err, errTagMoved) && attempt+1 < maxPushAttempts {
			continue // merge again with what the other writer tagged
		}
		if !reupload && blobUnknown(err) && attempt+1 < maxPushAttempts {
			reupload = true
			continue // upload every blob, whatever the registry said of it
		}
		if err != nil {
			return rep, s.fail("push", r.Provider, ver, name, err)
		}
		rep.Index = pl.indexDesc.Digest.String()
		if !pl.indexChanged || s.tmpl == nil {
			return rep, nil // a layout wrote the tag only if unchanged (swapTag)
		}
		// A registry has no conditional tag update: another writer may
		// have written the tag between our read and our write. Check, and
		// merge again with what it wrote.
		got, err := t.Resolve(ctx, rep.Tag)
		if err != nil {
			return rep, s.fail("push", r.Provider, ver, name, fmt.Errorf("check the tag %s: %w", rep.Tag, err))
		}
		if got.Digest == pl.indexDesc.Digest {
			return rep, nil
		}
		if attempt+1 == maxPushAttempts {
			return rep, s.fail("push", r.Provider, ver, name, fmt.Errorf("another writer keeps changing the tag %s (now %s)", rep.Tag, got.Digest))
		}
	}
}

// PushArchiveAhead uploads a release's archive as a blob of its
// provider's repository before the Push that will name it, so that the
// upload runs while the release's other archives still download; that
// Push then takes the blob as it is, without asking the registry about
// it again. No manifest names the blob until then, so no client can
// reach it.
//
// It uploads only for a version the repository has no tag of, the new
// version of a cold build: a tag that exists may hold something Push
// refuses to replace, and Push writes nothing then, so whatever it holds
// is left to Push. (Another writer may tag the version meanwhile; a blob
// uploaded for a push that is then refused is named by nothing, for the
// registry's garbage collection.) An archive without a staged file, or a
// blob the repository holds, is left alone. Errors name the provider,
// the version and the repository, as Push's do.
func (s *Store) PushArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a layout.Archive) error {
	if a.Staged == "" {
		return nil
	}
	t, name, err := s.open(p)
	if err != nil {
		return fmt.Errorf("push %s %s: %w", p, v, err)
	}
	if err := s.misfitFor(p.String(), v); err != nil {
		return err
	}
	if tagged, err := s.tagged(ctx, t, name, Tag(v)); err != nil || tagged {
		if err != nil {
			err = s.fail("push", p, v.String(), name, err)
		}
		return err
	}
	d, size, err := archiveDigest(ctx, t, a)
	if err != nil {
		return s.fail("push", p, v.String(), name, fmt.Errorf("%s: %w", a.Platform, err))
	}
	blob := upload{desc: ocispec.Descriptor{MediaType: MediaTypeZip, Digest: d, Size: size}, file: a.Staged}
	if _, _, err := s.uploadBlobs(ctx, t, []upload{blob}, 1, false); err != nil {
		return s.fail("push", p, v.String(), name, fmt.Errorf("%s: %w", a.Platform, err))
	}
	s.mu.Lock()
	s.ahead[name+"@"+d.String()] = true
	s.mu.Unlock()
	return nil
}

// tagged reports whether repository name holds tag, for
// PushArchiveAhead: a tag found missing is remembered until the
// version's push.
func (s *Store) tagged(ctx context.Context, t target, name, tag string) (bool, error) {
	ref := name + ":" + tag
	s.mu.Lock()
	untagged := s.untagged[ref]
	s.mu.Unlock()
	if untagged {
		return false, nil
	}
	_, err := t.Resolve(ctx, tag)
	switch {
	case err == nil:
		return true, nil
	case !isNotFound(err):
		return false, fmt.Errorf("read the tag %s: %w", tag, err)
	}
	s.mu.Lock()
	s.untagged[ref] = true
	s.mu.Unlock()
	return false, nil
}

// takeAhead reports, once, whether PushArchiveAhead put the blob d into
// repository name. A registry refuses a manifest naming a blob it lacks,
// so one collected meanwhile fails the push rather than breaking it.
func (s *Store) takeAhead(name string, d digest.Digest) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := name + "@" + d.String()
	ok := s.ahead[key]
	delete(s.ahead, key)
	return ok
}

// checkTag refuses a version's tag that is not a valid OCI tag.
func checkTag(tag string) error {
	if err := (registry.Reference{Reference: tag}).ValidateReferenceAsTag(); err != nil {
		return fmt.Errorf("the version's tag %q is not a valid OCI tag (letters, digits, _ . -, at most 128 characters): %w", tag, err)
	}
	return nil
}

// pkg is one platform's package to publish.
type pkg struct {
	plat     addrs.Platform
	file     string             // staged archive, "" when in the repository already
	layer    ocispec.Descriptor // the archive/zip layer
	manifest []byte
	entry    ocispec.Descriptor // the manifest's descriptor, as an index entry
}

// packages describes the release's archives as layers and manifests.
func (s *Store) packages(ctx context.Context, t target, r layout.Release) ([]pkg, error) {
	var out []pkg
	seen := map[addrs.Platform]bool{}
	for _, a := range r.Archives {
		if seen[a.Platform] {
			return nil, fmt.Errorf("the release lists %s twice", a.Platform)
		}
		seen[a.Platform] = true
		d, size, err := archiveDigest(ctx, t, a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.Platform, err)
		}
		data, entry, layer, err := platformManifest(r.Provider, r.Version, a.Platform, d, size)
		if err != nil {
			return nil, err
		}
		out = append(out, pkg{plat: a.Platform, file: a.Staged, layer: layer, manifest: data, entry: entry})
	}
	if len(out) == 0 {
		return nil, errors.New("the release has no archive")
	}
	slices.SortFunc(out, func(a, b pkg) int { return strings.Compare(a.plat.String(), b.plat.String()) })
	return out, nil
}

// archiveDigest is the sha256 digest and size of an archive: its zh: hash
// when the caller gave one (the upload is checked against it), else
// computed from the staged file.
func archiveDigest(ctx context.Context, t target, a layout.Archive) (digest.Digest, int64, error) {
	var zh digest.Digest
	for _, h := range a.Hashes {
		if d, ok := digestOfZH(h); ok {
			zh = d
			break
		}
	}
	if a.Staged == "" {
		if zh == "" {
			return "", 0, errors.New("the archive has no staged file and no zh: hash")
		}
		size, found, err := t.BlobSize(ctx, ocispec.Descriptor{Digest: zh})
		if err != nil {
			return "", 0, err
		}
		if !found {
			return "", 0, fmt.Errorf("the archive has no staged file and the repository does not hold %s: %w", zh, fs.ErrNotExist)
		}
		return zh, size, nil
	}
	info, err := os.Stat(a.Staged)
	if err != nil {
		return "", 0, err
	}
	if !info.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", a.Staged)
	}
	if zh != "" {
		return zh, info.Size(), nil
	}
	sum, n, err := hashing.HashFile(a.Staged)
	if err != nil {
		return "", 0, err
	}
	return digest.NewDigestFromBytes(digest.SHA256, sum[:]), n, nil
}

// errTagMoved: another writer changed the tag since the push read it.
var errTagMoved = errors.New("another writer changed the tag since it was read")

// pushPlan is what a push writes.
type pushPlan struct {
	// base is the digest the tag named when the plan read it, "" when
	// there was no tag: a layout writes the tag only if it still does.
	base         digest.Digest
	pkgs         []pkg // packages whose blobs and manifests to push
	indexData    []byte
	indexDesc    ocispec.Descriptor
	indexChanged bool
	record       *layout.Record // nil: no provenance artifact
	recordData   []byte
	recordDesc   ocispec.Descriptor
	recordBlobs  []blob
	// recordKept: the tag's provenance artifact is this one already;
	// planning read it and its layers, so nothing of it is written.
	recordKept bool
	// sboms are the packages' SBOM artifacts, pushed after the
	// platforms' manifests they refer to and before the record that
	// names them.
	sboms     []sbomPush
	conflicts []layout.Conflict
}

// plan reads what the tag holds and decides what to write.
func (s *Store) plan(ctx context.Context, t target, name string, r layout.Release, pkgs []pkg, opts PushOptions) (*pushPlan, error) {
	tag := Tag(r.Version)
	ref := name + ":" + tag
	pl := &pushPlan{}
	conflict := func(format string, args ...any) {
		pl.conflicts = append(pl.conflicts, layout.Conflict{Path: ref, Message: fmt.Sprintf(format, args...)})
	}

	var (
		entries     []ocispec.Descriptor
		annotations map[string]string
		oldRecord   *keptRecord
	)
	existing, data, err := t.FetchIndex(ctx, tag)
	found := err == nil
	switch {
	case isNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("read the tag %s: %w", tag, err)
	}
	fresh := !found
	if found {
		pl.base = existing.Digest
		idx, problem := indexOf(existing, data)
		switch {
		case problem != "" && opts.Overwrite:
			fresh = true
		case problem != "":
			conflict("the tag holds %s (%s), not an OpenTofu provider index: tfmirror does not replace it unless told to overwrite", existing.Digest, problem)
			return pl, nil
		default:
			entries, annotations = idx.Manifests, idx.Annotations
		}
		if !fresh {
			kept, err := readRecord(ctx, t, existing)
			switch {
			case err != nil && !opts.Overwrite:
				conflict("the provenance kept for the index %s cannot be read: %v", existing.Digest, err)
			case err == nil:
				oldRecord = kept
			}
		}
	}

	// Merge the release's packages into the index.
	changed := fresh
	subjects := map[addrs.Platform]ocispec.Descriptor{}
	for _, p := range pkgs {
		var same, differ []int // entries of p's platform with p's package, with another
		var layers []ocispec.Descriptor
		var readErr error
		for i, d := range entries {
			if plat, ok := targetPlatform(d); !ok || plat != p.plat {
				continue
			}
			if d.Digest == p.entry.Digest {
				same = append(same, i)
				continue
			}
			layer, err := s.layerOf(ctx, t, d)
			switch {
			case err == nil && layer.Digest == p.layer.Digest:
				same = append(same, i) // the same package in another tool's manifest: kept
			case err != nil:
				readErr = fmt.Errorf("the tag lists the manifest %s, which cannot be read: %w", d.Digest, err)
				differ = append(differ, i)
			default:
				layers = append(layers, layer)
				differ = append(differ, i)
			}
		}
		switch {
		case len(same)+len(differ) == 0:
			entries = append(entries, p.entry)
			pl.pkgs = append(pl.pkgs, p)
			subjects[p.plat] = p.entry
			changed = true
		case len(differ) == 0 && len(same) == 1:
			// Published already.
			subjects[p.plat] = entries[same[0]]
		case opts.Overwrite:
			drop := append(same, differ...)
			kept := entries[:0:0]
			for i, d := range entries {
				if !slices.Contains(drop, i) {
					kept = append(kept, d)
				}
			}
			entries = append(kept, p.entry)
			pl.pkgs = append(pl.pkgs, p)
			subjects[p.plat] = p.entry
			changed = true
		case len(differ) == 0:
			conflict("%s: the tag lists the platform %d times, which OpenTofu refuses as ambiguous", p.plat, len(same))
		case len(layers) > 0:
			conflict("%s: the tag holds the package %s, the release brings %s: tfmirror never replaces a published package, "+
				"clients may have locked it; remove the tag first if the new one is right",
				p.plat, layers[0].Digest, p.layer.Digest)
		default:
			conflict("%s: %v; the release brings the package %s", p.plat, readErr, p.layer.Digest)
		}
	}

	// The record.
	var old *layout.Record
	if oldRecord != nil {
		old = &oldRecord.Record
	}
	rec, recConflicts := mergeRecord(old, r.Record, opts)
	for _, c := range recConflicts {
		conflict("%s", c)
	}
	if len(pl.conflicts) > 0 {
		return pl, nil
	}
	if r.Record != nil {
		if pl.sboms, err = planSBOMs(r, rec, subjects); err != nil {
			return nil, err
		}
	}

	if changed {
		if pl.indexData, pl.indexDesc, err = encodeIndex(entries, annotations); err != nil {
			return nil, err
		}
		pl.indexChanged = !found || pl.indexDesc.Digest != existing.Digest
	} else {
		pl.indexDesc = existing
	}
	if rec != nil {
		pl.recordData, pl.recordDesc, pl.recordBlobs, err = provenanceArtifact(r.Provider, r.Version, *rec, pl.indexDesc)
		if err != nil {
			return nil, err
		}
		pl.record = rec
		// The same digest is the same record referring to the same index.
		pl.recordKept = oldRecord != nil && oldRecord.manifest.Digest == pl.recordDesc.Digest
	}
	return pl, nil
}

// indexOf decodes the index under a tag (desc and data, as FetchIndex
// read them); problem says why it is not an OpenTofu provider index.
func indexOf(desc ocispec.Descriptor, data []byte) (idx ocispec.Index, problem string) {
	if desc.MediaType != ocispec.MediaTypeImageIndex {
		return ocispec.Index{}, "a " + excerpt.Quote(desc.MediaType)
	}
	idx, err := decodeIndex(data)
	if err != nil {
		return ocispec.Index{}, err.Error()
	}
	return idx, ""
}

// layerOf returns the package layer of a platform's manifest.
func (s *Store) layerOf(ctx context.Context, t target, entry ocispec.Descriptor) (ocispec.Descriptor, error) {
	data, err := fetchManifest(ctx, t, entry)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return zipLayer(data)
}

// mergeRecord merges the release's record into the one kept, as
// layout.Policy does for a tree.
func mergeRecord(old, add *layout.Record, opts PushOptions) (*layout.Record, []string) {
	switch {
	case add == nil && old == nil:
		return nil, nil
	case add == nil:
		return old, nil
	case old == nil:
		out := *add
		out.Provenance.Archives = make(map[string]layout.ProvenanceArchive, len(add.Provenance.Archives))
		for plat, a := range add.Provenance.Archives {
			out.Provenance.Archives[plat] = a.Merged(layout.ProvenanceArchive{}) // names the SBOMs it pushes (planSBOMs)
		}
		return &out, nil
	}
	refuse := opts.Policy == layout.Refuse && !opts.Overwrite
	var conflicts []string
	out := *old
	out.Provenance.Archives = maps.Clone(old.Provenance.Archives)
	if out.Provenance.Archives == nil {
		out.Provenance.Archives = map[string]layout.ProvenanceArchive{}
	}
	if !bytes.Equal(old.Sums, add.Sums) {
		if refuse {
			conflicts = append(conflicts, "the registry keeps other SHA256SUMS for this release than the publication brings")
		}
		out.Sums = add.Sums
	}
	switch {
	case add.Signature == nil && old.Signature != nil:
		if !refuse {
			out.Signature = nil // Repair: the release has none now
		}
	case old.Signature == nil:
		out.Signature = add.Signature // kept where there was none
	case !bytes.Equal(old.Signature, add.Signature):
		if refuse {
			conflicts = append(conflicts, "the registry keeps another signature of SHA256SUMS for this release than the publication brings")
		}
		out.Signature = add.Signature
	}
	keys := add.Provenance.SigningKeys
	if keys == nil {
		keys = []string{}
	}
	oldKeys := old.Provenance.SigningKeys
	if oldKeys == nil {
		oldKeys = []string{}
	}
	switch {
	case !refuse:
		out.Provenance.SetSigner(add.Provenance, keys)
	case !old.Provenance.SameSigner(add.Provenance):
		conflicts = append(conflicts, fmt.Sprintf("the release was verified with other signing keys in the registry (key %s) than in the publication (key %q)",
			excerpt.Quote(old.Provenance.KeyID), add.Provenance.KeyID))
	default: // the same key, maybe in another form (re-issued): the registry keeps its own
		out.Provenance.SigningKeys = oldKeys
	}
	for _, plat := range slices.Sorted(maps.Keys(add.Provenance.Archives)) {
		a := add.Provenance.Archives[plat]
		d, ok := old.Provenance.Archives[plat]
		if ok && !d.SamePackage(a) && refuse {
			conflicts = append(conflicts, fmt.Sprintf("%s: the registry records another package (%s) than the publication (%s)", plat, d.H1, a.H1))
		}
		out.Provenance.Archives[plat] = a.Merged(d)
	}
	return &out, conflicts
}

// execute writes a plan: blobs, manifests, then the index, the record
// and the tag (publishIndex). With reupload, every blob it has the bytes
// of is uploaded, even one the registry says it holds.
func (s *Store) execute(ctx context.Context, t target, pl *pushPlan, opts PushOptions, rep *PushReport, reupload bool) error {
	parallel := s.parallelism(opts.Parallel)
	var uploads []upload
	seen := map[digest.Digest]bool{}
	add := func(u upload) {
		if !seen[u.desc.Digest] {
			seen[u.desc.Digest] = true
			uploads = append(uploads, u)
		}
	}
	writeRecord := pl.record != nil && !pl.recordKept
	if len(pl.pkgs) > 0 || writeRecord || len(pl.sboms) > 0 {
		add(emptyConfig())
	}
	ahead := 0
	for _, p := range pl.pkgs {
		if s.takeAhead(rep.Repository, p.layer.Digest) {
			seen[p.layer.Digest] = true
			ahead++
			continue
		}
		add(upload{desc: ocispec.Descriptor{MediaType: p.layer.MediaType, Digest: p.layer.Digest, Size: p.layer.Size}, file: p.file})
	}
	if writeRecord {
		for _, b := range pl.recordBlobs {
			add(upload{desc: ocispec.Descriptor{MediaType: b.desc.MediaType, Digest: b.desc.Digest, Size: b.desc.Size}, data: b.data})
		}
	}
	for _, sb := range pl.sboms {
		add(upload{desc: ocispec.Descriptor{MediaType: sb.layer.desc.MediaType, Digest: sb.layer.desc.Digest, Size: sb.layer.desc.Size}, data: sb.layer.data})
	}

	// 1. Blobs.
	uploaded, present, err := s.uploadBlobs(ctx, t, uploads, parallel, reupload)
	if err != nil {
		return err
	}
	rep.BlobsUploaded += uploaded
	rep.BlobsPresent += present + ahead

	// 2. The platforms' manifests.
	var pushed, there atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, p := range pl.pkgs {
		g.Go(func() error {
			ok, err := t.Exists(gctx, p.entry)
			if err != nil {
				return fmt.Errorf("check the %s manifest %s: %w", p.plat, p.entry.Digest, err)
			}
			if ok {
				there.Add(1)
				return nil
			}
			desc := ocispec.Descriptor{MediaType: p.entry.MediaType, Digest: p.entry.Digest, Size: p.entry.Size}
			if err := t.Push(gctx, desc, bytes.NewReader(p.manifest)); err != nil {
				return fmt.Errorf("push the %s manifest %s: %w", p.plat, p.entry.Digest, err)
			}
			pushed.Add(1)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	rep.ManifestsPushed += int(pushed.Load())
	rep.ManifestsPresent += int(there.Load())

	// 2b. The packages' SBOMs, referring to their manifests.
	sbomsPushed, sbomsThere, err := pushSBOMs(ctx, t, pl.sboms)
	rep.ManifestsPushed += sbomsPushed
	rep.ManifestsPresent += sbomsThere
	if err != nil {
		return err
	}

	// 3. The index and its provenance, then the tag: the tag is written
	// last, so that it never names an index without its provenance.
	if pl.recordKept {
		rep.ManifestsPresent++
		rep.BlobsPresent += len(pl.recordBlobs)
	}
	switch {
	case writeRecord && pl.indexChanged:
		if err := publishIndex(ctx, t, pl, rep.Tag); err != nil {
			return err
		}
		rep.ManifestsPushed++
		rep.RecordPushed, rep.IndexPushed = true, true
	case writeRecord:
		// The tag names the index already; only its provenance is
		// missing (a push stopped before it, or a tag another tool
		// wrote) or differs. Pushed even when the manifest is there:
		// planning did not find it referring to the index (a push killed
		// between storing it and indexing it as a referrer leaves it
		// so), and PushReferrer does.
		if err := t.PushReferrer(ctx, pl.recordDesc, pl.recordData, pl.indexDesc); err != nil {
			return fmt.Errorf("push the provenance manifest %s: %w", pl.recordDesc.Digest, err)
		}
		rep.ManifestsPushed++
		rep.RecordPushed = true
	case pl.indexChanged:
		// No provenance to keep (the release has no record, nor had the
		// tag): the index goes under the tag in one step.
		var err error
		if st, ok := t.(tagSwapper); ok {
			err = st.swapTag(ctx, pl.indexDesc, pl.indexData, rep.Tag, pl.base, ocispec.Descriptor{}, nil)
		} else {
			err = t.PushTagged(ctx, pl.indexDesc, pl.indexData, rep.Tag)
		}
		if err != nil {
			return fmt.Errorf("push the index %s as %s: %w", pl.indexDesc.Digest, rep.Tag, err)
		}
		rep.IndexPushed = true
	}
	return nil
}

// tagSwapper is a target that writes a tag together with the referrer of
// the manifest it names (if any), in one atomic step, and only if the tag
// still names base, the digest the push planned from ("" for no tag):
// otherwise it writes nothing and returns an error wrapping errTagMoved,
// and the push merges again with what the other writer tagged. An image
// layout is one, under its lock; a registry can do neither.
type tagSwapper interface {
	swapTag(ctx context.Context, index ocispec.Descriptor, indexData []byte, tag string, base digest.Digest, referrer ocispec.Descriptor, referrerData []byte) error
}

// publishIndex writes a new index and the provenance artifact referring
// to it, then points the tag at the index: the index by its digest,
// untagged; the provenance, which names it as its subject; the tag. A
// failure before the last step leaves the tag as it was (or missing),
// with at most an untagged index and its referrer in the repository,
// which the next push finds and completes.
func publishIndex(ctx context.Context, t target, pl *pushPlan, tag string) error {
	if st, ok := t.(tagSwapper); ok {
		if err := st.swapTag(ctx, pl.indexDesc, pl.indexData, tag, pl.base, pl.recordDesc, pl.recordData); err != nil {
			return fmt.Errorf("push the index %s as %s with its provenance manifest %s: %w", pl.indexDesc.Digest, tag, pl.recordDesc.Digest, err)
		}
		return nil
	}
	desc := ocispec.Descriptor{MediaType: pl.indexDesc.MediaType, Digest: pl.indexDesc.Digest, Size: pl.indexDesc.Size}
	if err := t.Push(ctx, desc, bytes.NewReader(pl.indexData)); err != nil {
		return fmt.Errorf("push the index %s: %w", pl.indexDesc.Digest, err)
	}
	if err := t.PushReferrer(ctx, pl.recordDesc, pl.recordData, pl.indexDesc); err != nil {
		return fmt.Errorf("push the provenance manifest %s of the index %s (the tag %s is not written without it): %w", pl.recordDesc.Digest, pl.indexDesc.Digest, tag, err)
	}
	if err := t.PushTagged(ctx, pl.indexDesc, pl.indexData, tag); err != nil {
		return fmt.Errorf("tag the index %s as %s: %w", pl.indexDesc.Digest, tag, err)
	}
	return nil
}

// swapTag stores the index and the referrer (none when its digest is
// empty), then, if the tag still names base (or the index already), lists
// both in one rewrite of index.json under the layout's lock: the tag
// (moved from the index it named, if any) and the referrer (replacing the
// subject's other referrers of its artifactType), as PushTagged and
// PushReferrer would one after the other. They cannot be one after the
// other in the provenance-first order: updateIndex drops a provenance
// artifact whose subject is not tagged, so a referrer listed before its
// tag would be dropped at once, and the layout would end with a tag and
// no provenance. Written together, index.json is never in between.
//
// The check against base is what keeps another process's publication:
// an index merged from what the tag named before that process moved it
// would drop the platforms it added.
func (l *layoutTarget) swapTag(ctx context.Context, index ocispec.Descriptor, indexData []byte, tag string, base digest.Digest, referrer ocispec.Descriptor, referrerData []byte) error {
	if err := l.pushBytes(ctx, index, indexData); err != nil {
		return err
	}
	if referrer.Digest != "" {
		if err := l.pushBytes(ctx, referrer, referrerData); err != nil {
			return err
		}
	}
	return l.updateIndex(ctx, func(entries []ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		var now digest.Digest
		for _, d := range entries {
			if d.Annotations[ocispec.AnnotationRefName] == tag {
				now = d.Digest
			}
		}
		if now != base && now != index.Digest {
			return nil, fmt.Errorf("the tag %s names %s, not %s as when it was read: %w", tag, orNone(now), orNone(base), errTagMoved)
		}
		var old []ocispec.Descriptor
		if referrer.Digest != "" {
			var err error
			if old, err = l.referrersIn(ctx, entries, index.Digest.String(), referrer.ArtifactType); err != nil {
				return nil, err
			}
		}
		entries = slices.DeleteFunc(entries, func(d ocispec.Descriptor) bool {
			name := d.Annotations[ocispec.AnnotationRefName]
			return name == tag || (name == "" && slices.ContainsFunc(old, func(o ocispec.Descriptor) bool { return o.Digest == d.Digest }))
		})
		tagged := index
		tagged.Platform = nil
		tagged.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
		entries = append(entries, tagged)
		if referrer.Digest != "" {
			ref := referrer
			ref.Platform = nil
			ref.Annotations = nil
			entries = append(entries, ref)
		}
		return entries, nil
	})
}

// orNone names a digest in a message, "no index" for none.
func orNone(d digest.Digest) string {
	if d == "" {
		return "no index"
	}
	return string(d)
}

// parallelism is how many uploads run at once: n, else Config.Parallel,
// else the default.
func (s *Store) parallelism(n int) int {
	if n <= 0 {
		n = s.cfg.Parallel
	}
	if n <= 0 {
		n = defaultParallel
	}
	return n
}

// upload is a blob to push: from a file (streamed) or from memory.
type upload struct {
	desc ocispec.Descriptor
	file string
	data []byte
}

// emptyConfig is the upload of the OCI empty config blob ("{}").
func emptyConfig() upload {
	empty := ocispec.DescriptorEmptyJSON
	return upload{desc: ocispec.Descriptor{MediaType: empty.MediaType, Digest: empty.Digest, Size: empty.Size}, data: empty.Data}
}

// uploadBlobs pushes the blobs the repository does not hold yet (found
// with a HEAD, or Exists in a layout), at most parallel at once, and
// counts those uploaded and those present already. With reupload, a blob
// it has the bytes of is uploaded without asking.
func (s *Store) uploadBlobs(ctx context.Context, t target, uploads []upload, parallel int, reupload bool) (uploaded, present int, err error) {
	var up, there atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, u := range uploads {
		g.Go(func() error {
			ok := false
			if !reupload || u.file == "" && u.data == nil {
				var err error
				if ok, err = t.Exists(gctx, u.desc); err != nil {
					return fmt.Errorf("check blob %s: %w", u.desc.Digest, err)
				}
			}
			if ok {
				there.Add(1)
				return nil
			}
			if u.file == "" && u.data == nil {
				return fmt.Errorf("blob %s: not in the repository, and no staged file: %w", u.desc.Digest, fs.ErrNotExist)
			}
			if err := s.pushBlob(gctx, t, u.desc, u.file, u.data); err != nil {
				return fmt.Errorf("upload blob %s: %w", u.desc.Digest, err)
			}
			up.Add(1)
			return nil
		})
	}
	err = g.Wait()
	return int(up.Load()), int(there.Load()), err
}

// pushBlob uploads a blob from a file (streamed, never held in memory) or
// from memory, retrying from the start what may go away.
func (s *Store) pushBlob(ctx context.Context, t target, desc ocispec.Descriptor, file string, data []byte) error {
	for attempt := 0; ; attempt++ {
		var err error
		if file != "" {
			var f *os.File
			if f, err = os.Open(file); err != nil {
				return err
			}
			err = t.Push(ctx, desc, f)
			_ = f.Close()
		} else {
			err = t.Push(ctx, desc, bytes.NewReader(data))
		}
		policy := s.cfg.retryPolicy()
		if err == nil || attempt >= policy.Retries || !transient(err) || ctx.Err() != nil {
			return err
		}
		wait := policy.Backoff(attempt + 1)
		notify.Retry(ctx, t.String()+"@"+desc.Digest.String(), attempt+2, wait, err)
		if err := syncx.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// blobUnknown reports whether a registry refused a manifest because it
// does not hold a blob the manifest names, although its answer to a HEAD
// said it did: some registries answer for a blob stored for another
// repository, or before the upload is linked. The push then runs again,
// uploading every blob (Push).
func blobUnknown(err error) bool {
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) || resp.Method != http.MethodPut || resp.URL == nil || !strings.Contains(resp.URL.Path, "/manifests/") {
		return false
	}
	for _, e := range resp.Errors {
		if e.Code == "MANIFEST_BLOB_UNKNOWN" || e.Code == errcode.ErrorCodeBlobUnknown {
			return true
		}
	}
	return false
}

package ocistore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// layoutTarget is one repository kept as an OCI image layout directory:
// oci-layout, index.json and blobs/sha256/<hex>.
//
// Blobs (and manifests, which are blobs too) are written by oras-go's
// content/oci storage: into ingest/, verified against their descriptor,
// then renamed into place; this package then syncs them to disk. The
// index.json is this package's: rewritten atomically (a temporary file,
// fsync, rename, fsync of the directory) under a lock on the oci-layout
// file, after every blob it names is durable, listing the tagged version
// indexes (with org.opencontainers.image.ref.name) and the provenance
// artifacts referring to them, in a stable order. oras-go's oci.Store is
// not used for that: it rewrites index.json in place and in map order.
type layoutTarget struct {
	root string
	mu   sync.Mutex // serializes index.json updates within the process
	// fault is Store.layoutFault: nil but in tests.
	fault func(what string) error
}

func (l *layoutTarget) String() string { return "oci-layout://" + l.root }

// crash fails a write as a test asked (Store.layoutFault).
func (l *layoutTarget) crash(what string) error {
	if l.fault == nil {
		return nil
	}
	return l.fault(what)
}

func (l *layoutTarget) blobPath(desc ocispec.Descriptor) (string, error) {
	if err := desc.Digest.Validate(); err != nil {
		return "", fmt.Errorf("invalid digest %s: %w", excerpt.Quote(string(desc.Digest)), err)
	}
	return filepath.Join(l.root, ocispec.ImageBlobsDir, desc.Digest.Algorithm().String(), desc.Digest.Encoded()), nil
}

func (l *layoutTarget) Exists(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	_, found, err := l.BlobSize(ctx, desc)
	return found, err
}

func (l *layoutTarget) BlobSize(_ context.Context, desc ocispec.Descriptor) (int64, bool, error) {
	p, err := l.blobPath(desc)
	if err != nil {
		return 0, false, err
	}
	info, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if !info.Mode().IsRegular() {
		return 0, false, fmt.Errorf("%s is not a regular file", p)
	}
	return info.Size(), true, nil
}

func (l *layoutTarget) Fetch(_ context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	p, err := l.blobPath(desc)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", desc.Digest, errdef.ErrNotFound)
	}
	return f, err
}

func (l *layoutTarget) Push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	if err := l.crash("blob " + desc.Digest.String()); err != nil {
		return err
	}
	if err := l.ensureLayout(); err != nil {
		return err
	}
	storage, err := oci.NewStorage(l.root)
	if err != nil {
		return err
	}
	// The storage ingests into ingest/ (left behind, empty: removing it
	// could race another writer's upload) and renames into blobs/.
	err = storage.Push(ctx, desc, r)
	if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	p, err := l.blobPath(desc)
	if err != nil {
		return err
	}
	if err := syncFile(p); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

// layoutIndex is index.json as read.
type layoutIndex struct {
	ocispec.Index
	missing bool
}

func (l *layoutTarget) readIndex() (layoutIndex, error) {
	data, err := os.ReadFile(filepath.Join(l.root, ocispec.ImageIndexFile))
	if errors.Is(err, fs.ErrNotExist) {
		return layoutIndex{missing: true}, nil
	}
	if err != nil {
		return layoutIndex{}, err
	}
	var idx ocispec.Index
	if err := json.Unmarshal(data, &idx); err != nil {
		return layoutIndex{}, fmt.Errorf("%s: %w", filepath.Join(l.root, ocispec.ImageIndexFile), err)
	}
	return layoutIndex{Index: idx}, nil
}

func (l *layoutTarget) Resolve(_ context.Context, tag string) (ocispec.Descriptor, error) {
	idx, err := l.readIndex()
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	for _, d := range idx.Manifests {
		if d.Annotations[ocispec.AnnotationRefName] == tag {
			d.Annotations = withoutRefName(d.Annotations)
			return d, nil
		}
	}
	return ocispec.Descriptor{}, fmt.Errorf("%s: %w", tag, errdef.ErrNotFound)
}

func (l *layoutTarget) FetchIndex(ctx context.Context, tag string) (ocispec.Descriptor, []byte, error) {
	desc, err := l.Resolve(ctx, tag)
	if err != nil || desc.MediaType != ocispec.MediaTypeImageIndex {
		return desc, nil, err
	}
	data, err := fetchManifest(ctx, l, desc)
	return desc, data, err
}

func (l *layoutTarget) Tags(context.Context) ([]string, error) {
	idx, err := l.readIndex()
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, d := range idx.Manifests {
		if name := d.Annotations[ocispec.AnnotationRefName]; name != "" {
			tags = append(tags, name)
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags), nil
}

func (l *layoutTarget) Referrers(ctx context.Context, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	idx, err := l.readIndex()
	if err != nil {
		return nil, err
	}
	return l.referrersIn(ctx, idx.Manifests, subject.Digest.String(), artifactType)
}

// referrersIn returns the entries of artifactType among entries whose
// manifest's subject has the digest subject.
func (l *layoutTarget) referrersIn(ctx context.Context, entries []ocispec.Descriptor, subject, artifactType string) ([]ocispec.Descriptor, error) {
	var out []ocispec.Descriptor
	for _, d := range entries {
		if d.ArtifactType != artifactType || d.MediaType != ocispec.MediaTypeImageManifest {
			continue
		}
		s, err := l.subjectOf(ctx, d)
		if err != nil {
			return nil, err
		}
		if s == subject {
			d.Annotations = withoutRefName(d.Annotations)
			out = append(out, d)
		}
	}
	return out, nil
}

func (l *layoutTarget) subjectOf(ctx context.Context, d ocispec.Descriptor) (string, error) {
	data, err := fetchManifest(ctx, l, d)
	if err != nil {
		return "", err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("manifest %s: %w", d.Digest, err)
	}
	if m.Subject == nil {
		return "", nil
	}
	return m.Subject.Digest.String(), nil
}

func (l *layoutTarget) PushTagged(ctx context.Context, desc ocispec.Descriptor, data []byte, tag string) error {
	if err := l.pushBytes(ctx, desc, data); err != nil {
		return err
	}
	return l.updateIndex(ctx, func(entries []ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		entries = slices.DeleteFunc(entries, func(d ocispec.Descriptor) bool {
			return d.Annotations[ocispec.AnnotationRefName] == tag
		})
		d := desc
		d.Platform = nil
		d.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
		return append(entries, d), nil
	})
}

func (l *layoutTarget) PushReferrer(ctx context.Context, desc ocispec.Descriptor, data []byte, subject ocispec.Descriptor) error {
	if err := l.pushBytes(ctx, desc, data); err != nil {
		return err
	}
	// Other referrers of the subject of the same type leave index.json;
	// their blobs stay, unreferenced.
	return l.updateIndex(ctx, func(entries []ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		old, err := l.referrersIn(ctx, entries, subject.Digest.String(), desc.ArtifactType)
		if err != nil {
			return nil, err
		}
		entries = slices.DeleteFunc(entries, func(d ocispec.Descriptor) bool {
			return d.Annotations[ocispec.AnnotationRefName] == "" && slices.ContainsFunc(old, func(o ocispec.Descriptor) bool { return o.Digest == d.Digest })
		})
		d := desc
		d.Platform = nil
		d.Annotations = nil
		return append(entries, d), nil
	})
}

func (l *layoutTarget) pushBytes(ctx context.Context, desc ocispec.Descriptor, data []byte) error {
	found, err := l.Exists(ctx, desc)
	if err != nil || found {
		return err
	}
	return l.Push(ctx, desc, bytes.NewReader(data))
}

// layoutLockWait bounds the wait for another process updating the same
// layout's index.json. That process holds the lock only while it reads
// and rewrites index.json, so it is normally free again at once; one
// that keeps it for minutes is stuck (stopped, or on a hung
// filesystem), and the push then fails wrapping atomicfile.ErrLocked
// instead of waiting for ever. Not --lock-timeout: its "0 fails at once"
// would make concurrent pushes into one layout fail, which always waited.
const layoutLockWait = 5 * time.Minute

// updateIndex rewrites index.json with change applied to its entries,
// under the layout's lock (on its oci-layout file, which every writer of
// the layout takes), waiting up to layoutLockWait or until ctx ends.
// Provenance artifacts whose subject is no longer tagged are dropped from
// it (their blobs stay, unreferenced).
func (l *layoutTarget) updateIndex(ctx context.Context, change func([]ocispec.Descriptor) ([]ocispec.Descriptor, error)) error {
	if err := l.crash(ocispec.ImageIndexFile); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureLayout(); err != nil {
		return err
	}
	unlock, err := atomicfile.Lock(ctx, filepath.Join(l.root, ocispec.ImageLayoutFile), layoutLockWait)
	if err != nil {
		return err
	}
	defer func() { _ = unlock() }()

	idx, err := l.readIndex()
	if err != nil {
		return err
	}
	entries, err := change(slices.Clone(idx.Manifests))
	if err != nil {
		return err
	}
	tagged := map[string]bool{}
	for _, d := range entries {
		if d.Annotations[ocispec.AnnotationRefName] != "" {
			tagged[d.Digest.String()] = true
		}
	}
	var keep []ocispec.Descriptor
	for _, d := range entries {
		if d.ArtifactType == ArtifactTypeProvenance && d.Annotations[ocispec.AnnotationRefName] == "" {
			s, err := l.subjectOf(ctx, d)
			if err != nil {
				return err
			}
			if !tagged[s] {
				continue
			}
		}
		keep = append(keep, d)
	}
	slices.SortStableFunc(keep, func(a, b ocispec.Descriptor) int {
		ra, rb := a.Annotations[ocispec.AnnotationRefName], b.Annotations[ocispec.AnnotationRefName]
		switch {
		case ra != "" && rb == "":
			return -1
		case ra == "" && rb != "":
			return 1
		case ra != rb:
			return strings.Compare(ra, rb)
		}
		return strings.Compare(a.Digest.String(), b.Digest.String())
	})
	if keep == nil {
		keep = []ocispec.Descriptor{}
	}
	out := idx.Index
	out.SchemaVersion = 2
	out.MediaType = ocispec.MediaTypeImageIndex
	out.Manifests = keep
	data, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(l.root, ocispec.ImageIndexFile), data)
}

// ensureLayout creates the layout's directory, its oci-layout file and an
// empty index.json where they are missing, each atomically.
func (l *layoutTarget) ensureLayout() error {
	if err := os.MkdirAll(filepath.Join(l.root, ocispec.ImageBlobsDir), 0o755); err != nil {
		return err
	}
	files := []struct {
		name string
		v    any
	}{
		{ocispec.ImageLayoutFile, ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion}},
		{ocispec.ImageIndexFile, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{}}},
	}
	for _, f := range files {
		p := filepath.Join(l.root, f.name)
		if _, err := os.Lstat(p); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		data, err := json.Marshal(f.v)
		if err != nil {
			return err
		}
		if err := atomicfile.CreateFile(p, data); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

func withoutRefName(a map[string]string) map[string]string {
	if _, ok := a[ocispec.AnnotationRefName]; !ok {
		return a
	}
	out := make(map[string]string, len(a))
	for k, v := range a {
		if k != ocispec.AnnotationRefName {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

package ocistore

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// A blob is named by its digest, but what a registry or a layout serves
// under that name is whatever its storage holds: a damaged disk, a broken
// or hostile registry serves other bytes. With --verify-existing
// (layout.Release.VerifyExisting, Held's verify) the archives a
// repository holds are therefore read again and hashed:
//   - Held counts a package as held only if its blob's bytes are its
//     digest and size;
//   - Push, before it plans, reads every archive blob of the release the
//     repository holds, and replaces one whose bytes are not its digest:
//     in an image layout the blob file is rewritten atomically from the
//     staged archive; a registry is sent the blob again and read once
//     more. A registry that still serves other bytes (one that keeps a
//     blob it holds, as distribution does, "content-addressable") fails
//     the push with ErrDigestMismatch, naming the repository and the
//     blob: only the registry's operator can remove it.

// blobIntact reads a blob and reports whether its bytes are its digest
// and size; what cannot be read is not intact.
func blobIntact(ctx context.Context, t target, desc ocispec.Descriptor, what string) error {
	rc, err := t.Fetch(ctx, desc)
	if err != nil {
		return err
	}
	defer rc.Close()
	vr := &verifyingReader{rc: rc, h: sha256.New(), want: desc, what: what}
	_, err = io.Copy(io.Discard, vr)
	return err
}

// reverify checks the archive blobs of pkgs that the repository holds and
// replaces those whose bytes are not their digest, from the staged files.
func (s *Store) reverify(ctx context.Context, t target, name string, pkgs []pkg) error {
	for _, p := range pkgs {
		if p.file == "" {
			continue
		}
		desc := ocispec.Descriptor{MediaType: p.layer.MediaType, Digest: p.layer.Digest, Size: p.layer.Size}
		found, err := t.Exists(ctx, desc)
		if err != nil {
			return fmt.Errorf("check blob %s: %w", desc.Digest, err)
		}
		if !found {
			continue // uploaded by the push
		}
		what := fmt.Sprintf("the %s package blob in %s", p.plat, name)
		err = blobIntact(ctx, t, desc, what)
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return err
		}
		if r, ok := t.(blobReplacer); ok {
			if err := r.replaceBlob(desc, p.file); err != nil {
				return fmt.Errorf("replace %s, which holds other bytes than its digest: %w", what, err)
			}
		} else if err := s.pushBlob(ctx, t, desc, p.file, nil); err != nil {
			return fmt.Errorf("upload again %s, which holds other bytes than its digest: %w", what, err)
		}
		if err := blobIntact(ctx, t, desc, what); err != nil {
			if errors.Is(err, ErrDigestMismatch) {
				return fmt.Errorf("blob %s still holds other bytes after it was uploaded again (the registry keeps a blob it has, whatever it holds): remove it from the registry's storage and build again: %w", desc.Digest, err)
			}
			return err
		}
	}
	return nil
}

// blobReplacer is a target that can rewrite a blob it holds: an image
// layout, whose files are tfmirror's.
type blobReplacer interface {
	replaceBlob(desc ocispec.Descriptor, file string) error
}

// replaceBlob rewrites the blob file of desc from file, atomically: a
// temporary file next to it, checked against desc, synced, renamed over
// it.
func (l *layoutTarget) replaceBlob(desc ocispec.Descriptor, file string) error {
	p, err := l.blobPath(desc)
	if err != nil {
		return err
	}
	src, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	tmp, err := os.CreateTemp(filepath.Dir(p), ".replace-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	vr := &verifyingReader{rc: src, h: sha256.New(), want: desc, what: file}
	_, err = io.Copy(tmp, vr)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		mode := os.FileMode(0o644)
		if info, serr := os.Stat(p); serr == nil {
			mode = info.Mode().Perm()
		}
		err = os.Chmod(tmp.Name(), mode)
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

var _ blobReplacer = (*layoutTarget)(nil)

// archiveLayer is the layer descriptor of a package archive.
func archiveLayer(a Archive) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: MediaTypeZip, Digest: digest.Digest(a.Digest), Size: a.Size}
}

package build

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/ocistore"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// ociRegistry is an OCI registry or image layout as a build's
// destination.
type ociRegistry struct {
	s *ocistore.Store
	// overwrite re-points a tag that holds other packages: only when the
	// user asked for it (--overwrite-oci-tags).
	overwrite bool
}

func (r ociRegistry) Location() string { return r.s.Location() }

// Held returns the packages under the version's tag that its provenance
// artifact records with the same bytes. A blob is named by its digest, so
// what the registry lists is what it holds: nothing needs downloading to
// be checked. The tag is resolved once: the record read is the one of the
// index whose packages were listed.
func (r ociRegistry) Held(ctx context.Context, p addrs.Provider, v addrs.Version) (map[addrs.Platform]mirror.HeldPackage, error) {
	rel, found, err := r.s.Release(ctx, p, v)
	if err != nil || !found {
		return nil, err
	}
	rec, err := r.s.RecordOf(ctx, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no provenance: publish again, to add it
	}
	if err != nil {
		return nil, err
	}
	out := map[addrs.Platform]mirror.HeldPackage{}
	for _, a := range rel.Archives {
		if prov, ok := rec.Provenance.Archives[a.Platform.String()]; ok && prov.ZH == a.ZH && prov.Size == a.Size {
			out[a.Platform] = mirror.HeldPackage{ZH: a.ZH, Size: a.Size, KeyID: rec.Provenance.KeyID}
		}
	}
	return out, nil
}

// Publish pushes the release under the build's policy: the provenance is
// repaired, a package with other bytes is refused. A repository template
// that does not fit the build's providers (an invalid repository name,
// one repository for two providers) is an InputError: the store found it
// while the build planned (Held names every provider first) and pushes
// nothing through it.
func (r ociRegistry) Publish(ctx context.Context, rel layout.Release) error {
	_, err := r.s.Push(ctx, rel, ocistore.PushOptions{Policy: layout.Repair, Overwrite: r.overwrite})
	return templateInput(err)
}

// PutArchiveAhead uploads an archive's blob before the release's push
// (mirror.AheadTaker).
func (r ociRegistry) PutArchiveAhead(ctx context.Context, p addrs.Provider, v addrs.Version, a layout.Archive) error {
	return templateInput(r.s.PushArchiveAhead(ctx, p, v, a))
}

// templateInput makes a repository template that does not fit a provider
// the user's input error; any other error is returned as it is.
func templateInput(err error) error {
	if errors.Is(err, ocistore.ErrTemplate) {
		return &InputError{err}
	}
	return err
}

// HeldModule reports whether the version's tag names a module package
// whose archive is the recorded one.
func (r ociRegistry) HeldModule(ctx context.Context, m addrs.Module, v addrs.Version, sha256Hex string) (bool, error) {
	pkg, found, err := r.s.ReadModule(ctx, m, v)
	if err != nil || !found {
		return false, err
	}
	return pkg.Layer == "sha256:"+sha256Hex, nil
}

// PublishModule pushes a module package; a tag that names another package
// is refused unless the user asked to overwrite tags.
func (r ociRegistry) PublishModule(ctx context.Context, m addrs.Module, v addrs.Version, path string, rec layout.ModuleRecord) error {
	_, err := r.s.PushModule(ctx, m, v, path, rec.SHA256, rec.Size, r.overwrite)
	return err
}

// checkRegistries fails a build before any download when an OCI
// destination cannot take it: a repository template that does not give
// each required provider a repository of its own (an input error), or a
// registry that cannot be reached or refuses the credentials, asked once
// per registry host.
func (outs outputs) checkRegistries(ctx context.Context, reqs []mirror.Requirement) error {
	for _, o := range outs {
		if o.OCI == nil {
			continue
		}
		hosts := map[string]addrs.Provider{} // a provider per registry host
		for _, req := range reqs {
			repo, err := o.OCI.Repository(req.Provider)
			if err != nil {
				return &InputError{fmt.Errorf("--out %s: %w", o.Ref, err)}
			}
			host, _, _ := strings.Cut(repo, "/")
			if _, seen := hosts[host]; !seen {
				hosts[host] = req.Provider
			}
		}
		for _, host := range slices.Sorted(maps.Keys(hosts)) {
			if err := o.OCI.Ping(ctx, hosts[host]); err != nil {
				return fmt.Errorf("nothing was downloaded: %w", err)
			}
		}
	}
	return nil
}

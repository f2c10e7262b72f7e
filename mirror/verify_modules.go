package mirror

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// moduleLister is a mirror that lists the module versions it holds, with
// their records (a tree); a registry lists none.
type moduleLister interface {
	Modules(ctx context.Context) ([]addrs.Module, error)
	ModuleVersions(ctx context.Context, m addrs.Module) (addrs.VersionList, error)
	ReadModuleRecord(ctx context.Context, m addrs.Module, v addrs.Version) (layout.ModuleRecord, error)
	OpenModuleArchive(ctx context.Context, m addrs.Module, v addrs.Version) (io.ReadCloser, error)
	LocalPath(rel string) (string, bool)
}

// verifyModules checks every module version of a mirror that lists them:
// its record parses, its package is the recorded bytes, and the package
// unpacks as a module directory (no escaping name, no link) within the
// module limits (v.ModuleLimits, never the provider limits: a module
// package a build would refuse is refused here too).
func (v *Verifier) verifyModules(ctx context.Context, r *VerifyReport) error {
	ml, ok := v.Mirror.(moduleLister)
	if !ok {
		return nil
	}
	modules, err := ml.Modules(ctx)
	if err != nil {
		return fmt.Errorf("list modules: %w", err)
	}
	for _, m := range modules {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.Modules++
		versions, err := ml.ModuleVersions(ctx, m)
		if err != nil {
			r.problem(layout.ModuleIndexPath(m), "%v", err)
			continue
		}
		if len(versions) == 0 {
			r.problem(layout.ModuleIndexPath(m), "the catalog lists module %s, but it has no index.json or no version", m.ForDisplay())
		}
		for _, ver := range versions {
			r.ModuleVersions++
			v.verifyModuleVersion(ctx, r, ml, m, ver)
		}
	}
	return nil
}

func (v *Verifier) verifyModuleVersion(ctx context.Context, r *VerifyReport, ml moduleLister, m addrs.Module, ver addrs.Version) {
	rec, err := ml.ReadModuleRecord(ctx, m, ver)
	if err != nil {
		r.problem(layout.ModuleRecordPath(m, ver), "%v", err)
		return
	}
	rel := layout.ModuleArchivePath(m, ver)
	if err := v.checkModulePackage(ctx, ml, m, ver, rec); err != nil {
		r.problem(rel, "module %s %s: %v", m.ForDisplay(), ver, err)
	}
}

// checkModulePackage copies the package to a temporary file (or reads it
// in place), checks its digest against the record and its entries.
func (v *Verifier) checkModulePackage(ctx context.Context, ml moduleLister, m addrs.Module, ver addrs.Version, rec layout.ModuleRecord) error {
	rel := layout.ModuleArchivePath(m, ver)
	local, ok := ml.LocalPath(rel)
	if !ok {
		body, err := ml.OpenModuleArchive(ctx, m, ver)
		if errors.Is(err, fs.ErrNotExist) {
			return errMissing
		}
		if err != nil {
			return err
		}
		defer func() { _ = body.Close() }()
		tmp, err := os.CreateTemp(v.TempDir, "tfmirror-module-*.zip")
		if err != nil {
			return err
		}
		defer func() { _ = os.Remove(tmp.Name()) }()
		_, err = io.Copy(tmp, io.LimitReader(body, rec.Size+1))
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		local = tmp.Name()
	}
	return checkModuleFile(local, rec, v.ModuleLimits)
}

func checkModuleFile(path string, rec layout.ModuleRecord, limits hashing.ModuleLimits) error {
	f, err := hashing.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return errMissing
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	if err := layout.CheckModuleArchive(f, rec); err != nil {
		return err
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return fmt.Errorf("not a zip archive: %w", err)
	}
	defer func() { _ = zr.Close() }()
	return hashing.CheckZip(&zr.Reader, limits.Zip())
}

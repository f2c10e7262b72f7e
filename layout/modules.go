package layout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
)

// ModulesDir is the directory under the tree's root that holds module
// packages, one subdirectory per registry host. Hostnames always hold a
// dot, so it never meets a provider's host directory.
const ModulesDir = "modules"

// ModuleDir is the directory of a module package's versions.
func ModuleDir(m addrs.Module) string {
	return path.Join(ModulesDir, string(m.Host), m.Namespace, m.Name, m.TargetSystem)
}

// ModuleIndexPath is the relative path of a module's index.json, which
// lists its mirrored versions.
func ModuleIndexPath(m addrs.Module) string { return path.Join(ModuleDir(m), "index.json") }

// ModuleRecordPath is the relative path of a module version's record.
func ModuleRecordPath(m addrs.Module, v addrs.Version) string {
	return path.Join(ModuleDir(m), v.String()+".json")
}

// ModuleArchivePath is the relative path of a module version's package.
func ModuleArchivePath(m addrs.Module, v addrs.Version) string {
	return path.Join(ModuleDir(m), v.String()+".zip")
}

// ModuleRecord says what a mirrored module version is and where it came
// from. It holds no time, so rebuilds write the same bytes.
type ModuleRecord struct {
	// SHA256 is the hex digest of the package archive; Size its length.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Subdir is where in the package the module lives ("" for its root),
	// as the upstream location named it.
	Subdir   string         `json:"subdir,omitempty"`
	Upstream ModuleUpstream `json:"upstream"`
	// Calls are the registry modules the module calls, so that a later
	// run mirrors them without fetching the package again.
	Calls []ModuleCall `json:"calls"`
}

// ModuleCall is one registry module a module calls, with the version
// constraint of the call ("" for none).
type ModuleCall struct {
	Module  string `json:"module"`
	Version string `json:"version,omitempty"`
}

// ModuleUpstream is the provenance of a module package: what the origin
// registry pointed at and what was found there.
type ModuleUpstream struct {
	// Location is the download location the registry returned, without
	// credentials.
	Location string `json:"location"`
	// Commit is the git commit checked out, for git locations.
	Commit string `json:"commit,omitempty"`
	// ArchiveSHA256 is the hex digest of the archive downloaded, for
	// archive locations.
	ArchiveSHA256 string `json:"archive_sha256,omitempty"`
}

// ModuleRelease is one module version to publish: a package archive
// already built and checked, and its record.
type ModuleRelease struct {
	Module  addrs.Module
	Version addrs.Version
	Staged  string // the package archive in the workspace
	Move    bool   // the store may take Staged by renaming it
	Record  ModuleRecord
}

// ModuleIndex is the content of a module's index.json.
type ModuleIndex struct {
	Versions map[string]struct{} `json:"versions"`
}

// DecodeModuleIndex parses a module's index.json.
func DecodeModuleIndex(data []byte) (ModuleIndex, error) {
	if err := checkMembers(data, "versions", MaxVersions); err != nil {
		return ModuleIndex{}, fmt.Errorf("parse module index.json: %w", err)
	}
	var idx ModuleIndex
	if err := decodeStrict(data, &idx); err != nil {
		return ModuleIndex{}, fmt.Errorf("parse module index.json: %w", err)
	}
	if idx.Versions == nil {
		return ModuleIndex{}, errors.New("parse module index.json: no \"versions\" object")
	}
	return idx, nil
}

// DecodeModuleRecord parses a module version's record.
func DecodeModuleRecord(data []byte) (ModuleRecord, error) {
	var r ModuleRecord
	if err := decodeStrict(data, &r); err != nil {
		return ModuleRecord{}, fmt.Errorf("parse module record: %w", err)
	}
	if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != 32 {
		return ModuleRecord{}, fmt.Errorf("parse module record: sha256 %s is not a SHA-256 digest", excerpt.Quote(r.SHA256))
	}
	if r.Size < 0 {
		return ModuleRecord{}, errors.New("parse module record: negative size")
	}
	if err := CheckSubdir(r.Subdir); err != nil {
		return ModuleRecord{}, fmt.Errorf("parse module record: %w", err)
	}
	for _, c := range r.Calls {
		if _, err := addrs.ParseModule(c.Module); err != nil {
			return ModuleRecord{}, fmt.Errorf("parse module record: calls: %w", err)
		}
	}
	if r.Calls == nil {
		r.Calls = []ModuleCall{}
	}
	return r, nil
}

// CheckSubdir refuses a module subdirectory that is not a plain relative
// path inside its package.
func CheckSubdir(s string) error {
	if s == "" {
		return nil
	}
	if path.IsAbs(s) || strings.Contains(s, `\`) || path.Clean(s) != s || s == ".." || strings.HasPrefix(s, "../") {
		return fmt.Errorf("subdirectory %s is not a plain path inside the package", excerpt.Quote(s))
	}
	return nil
}

// PublishModules makes module versions visible in publish order: each
// package archive, then its record, then the module's index.json, then
// catalog.json, with the same planning, atomicity and concurrency rules as
// PublishAll. A published version is never replaced by other bytes: a
// package whose record differs is a conflict (the upstream moved), and
// the whole publication is refused with the tree as it was. Under Repair a
// missing or damaged archive of a recorded version is written again.
func (t *Tree) PublishModules(ctx context.Context, policy Policy, releases []ModuleRelease) (PublishReport, error) {
	return t.PublishMirror(ctx, policy, nil, releases)
}

// module plans one module version.
func (pl *planner) module(ctx context.Context, r ModuleRelease) error {
	rec, err := pl.moduleRecord(ctx, r.Module, r.Version)
	if err != nil {
		return err
	}
	recRel := ModuleRecordPath(r.Module, r.Version)
	if rec.SHA256 != "" && rec.SHA256 != r.Record.SHA256 {
		pl.conflict(recRel, "module %s version %s: the mirror holds a package with SHA-256 %s%s, but the upstream now gives %s%s: "+
			"tfmirror never replaces a published module version; remove it from the mirror first if the new content is right",
			r.Module.ForDisplay(), r.Version, rec.SHA256, commitNote(rec.Upstream), r.Record.SHA256, commitNote(r.Record.Upstream))
		return nil
	}
	if rec.SHA256 == "" {
		*rec = r.Record
	}
	if err := pl.moduleArchive(ctx, r); err != nil {
		return err
	}
	idx, err := pl.moduleIndex(ctx, r.Module)
	if err != nil {
		return err
	}
	idx.Versions[r.Version.String()] = struct{}{}
	return nil
}

func commitNote(u ModuleUpstream) string {
	if u.Commit == "" {
		return ""
	}
	return " (commit " + u.Commit + ")"
}

// moduleArchive plans a module's package archive: written where missing,
// or under Repair where the bytes there are not the recorded ones.
func (pl *planner) moduleArchive(ctx context.Context, r ModuleRelease) error {
	rel := ModuleArchivePath(r.Module, r.Version)
	have, exists, err := pl.digestOf(ctx, rel, false, -1)
	if err != nil && !errors.Is(err, ErrNotRegular) {
		return err
	}
	if exists && err == nil && hex.EncodeToString(have[:]) == r.Record.SHA256 {
		// Published, or written by another publisher a moment ago.
		pl.unchanged++
		return nil
	}
	if exists && pl.policy == Refuse {
		pl.conflict(rel, "the destination already holds other bytes for module %s version %s", r.Module.ForDisplay(), r.Version)
		return nil
	}
	return pl.fileWrite(rel, Content{File: r.Staged, Move: r.Move}, err, !exists)
}

func (pl *planner) moduleRecord(ctx context.Context, m addrs.Module, v addrs.Version) (*ModuleRecord, error) {
	d, err := pl.load(ctx, ModuleRecordPath(m, v), KindVersion,
		func(b []byte) (any, error) { r, err := DecodeModuleRecord(b); return &r, err },
		func() any { return &ModuleRecord{} })
	if err != nil {
		return nil, err
	}
	return d.value.(*ModuleRecord), nil
}

func (pl *planner) moduleIndex(ctx context.Context, m addrs.Module) (*ModuleIndex, error) {
	d, err := pl.load(ctx, ModuleIndexPath(m), KindIndex,
		func(b []byte) (any, error) { idx, err := DecodeModuleIndex(b); return &idx, err },
		func() any { return &ModuleIndex{Versions: map[string]struct{}{}} })
	if err != nil {
		return nil, err
	}
	return d.value.(*ModuleIndex), nil
}

// ModuleVersions lists the module's mirrored versions, sorted; none when
// the mirror does not hold it.
func (t *Tree) ModuleVersions(ctx context.Context, m addrs.Module) (addrs.VersionList, error) {
	data, err := t.readDoc(ctx, ModuleIndexPath(m), MaxDocumentBytes)
	if err != nil || data == nil {
		return nil, err
	}
	idx, err := DecodeModuleIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ModuleIndexPath(m), err)
	}
	out := make(addrs.VersionList, 0, len(idx.Versions))
	for s := range idx.Versions {
		v, err := addrs.ParseVersion(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ModuleIndexPath(m), err)
		}
		out = append(out, v)
	}
	out.Sort()
	return out, nil
}

// ReadModuleRecord returns a mirrored module version's record; the error
// wraps fs.ErrNotExist when the mirror has none.
func (t *Tree) ReadModuleRecord(ctx context.Context, m addrs.Module, v addrs.Version) (ModuleRecord, error) {
	rel := ModuleRecordPath(m, v)
	data, err := t.r.ReadFile(ctx, rel, MaxDocumentBytes)
	if err != nil {
		return ModuleRecord{}, fmt.Errorf("read %s: %w", rel, err)
	}
	r, err := DecodeModuleRecord(data)
	if err != nil {
		return ModuleRecord{}, fmt.Errorf("%s: %w", rel, err)
	}
	return r, nil
}

// OpenModuleArchive opens a mirrored module version's package; the caller
// checks it against the record.
func (t *Tree) OpenModuleArchive(ctx context.Context, m addrs.Module, v addrs.Version) (io.ReadCloser, error) {
	return t.r.Open(ctx, ModuleArchivePath(m, v))
}

// Modules lists the modules the tree holds, sorted: those catalog.json
// names and, where the store can list its files, every module directory
// holding an index.json.
func (t *Tree) Modules(ctx context.Context) ([]addrs.Module, error) {
	c, _, err := t.ReadCatalog(ctx)
	if err != nil {
		return nil, err
	}
	raw := slices.Clone(c.Modules)
	if s, ok := t.r.(Store); ok {
		files, err := s.List(ctx, ModulesDir)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if parts := strings.Split(f, "/"); len(parts) == 6 && parts[5] == "index.json" {
				raw = append(raw, addrs.Hostname(parts[1]).ForDisplay()+"/"+path.Join(parts[2:5]...))
			}
		}
	}
	seen := map[string]bool{}
	var out []addrs.Module
	for _, r := range raw {
		m, err := addrs.ParseModule(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CatalogPath, err)
		}
		if !seen[m.String()] {
			seen[m.String()] = true
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b addrs.Module) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// moduleFiles adds a module's files to set.
func (t *Tree) moduleFiles(ctx context.Context, m addrs.Module, set fileSet) error {
	if err := set.add(ctx, t.r, ModuleIndexPath(m), KindIndex); err != nil {
		return err
	}
	versions, err := t.ModuleVersions(ctx, m)
	if err != nil {
		return err
	}
	for _, v := range versions {
		if err := set.add(ctx, t.r, ModuleRecordPath(m, v), KindVersion); err != nil {
			return err
		}
		if err := set.add(ctx, t.r, ModuleArchivePath(m, v), KindFile); err != nil {
			return err
		}
	}
	return nil
}

// CheckModuleArchive reports whether the bytes read from r are the
// recorded package.
func CheckModuleArchive(r io.Reader, rec ModuleRecord) error {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != rec.SHA256 || n != rec.Size {
		return fmt.Errorf("package has SHA-256 %s and %d bytes, the record says %s and %d bytes", got, n, rec.SHA256, rec.Size)
	}
	return nil
}

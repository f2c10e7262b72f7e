package layout

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// StagingDirName is the directory under a local mirror's root where
// downloads wait until they are verified. Nothing in it is ever referenced
// by an index.
const StagingDirName = PrivateDirName + "/staging"

// unpackDirName, in a workspace, is where packages of an unpacked
// filesystem mirror are extracted before they appear.
const unpackDirName = "unpack"

// Workspace is the local disk a build works in: a staging area for
// downloads until they are verified and published, and the partial
// downloads a later run can resume. It is private to tfmirror and never
// part of a published tree. For a local output it lives in the output's
// private directory, so publishing a staged archive is a hard link.
//
// Like a DirStore, it never follows a symbolic link in its directory: the
// directory itself, the staging area, the partial downloads and what is
// in them must be real directories and regular files.
type Workspace struct {
	dir     string           // the private directory holding staging and partial
	staging string           // its staging area, "" once closed
	root    *atomicfile.Root // dir

	mu       sync.Mutex
	partials map[string]bool // partial downloads in use
}

// stagingName is the staging area in a workspace.
const stagingName = "staging"

// OpenWorkspace prepares the workspace in the private directory dir
// (created if needed): it removes partial downloads nobody touched for a
// week and what interrupted runs left in the staging and unpack areas,
// and creates an empty staging area. The caller holds the lock of
// the store dir belongs to, if any, so no live process uses them. dir
// must not be a link; its parent may be.
func OpenWorkspace(dir string) (*Workspace, error) {
	root, err := openPrivateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	w := &Workspace{dir: dir, staging: filepath.Join(dir, stagingName), root: root, partials: map[string]bool{}}
	if err := w.prepare(); err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	return w, nil
}

// openPrivateDir creates the directory dir if needed and opens it, refusing
// a link at dir.
func openPrivateDir(dir string) (*atomicfile.Root, error) {
	dir = filepath.Clean(dir)
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := atomicfile.MkdirAll(parent); err != nil {
		return nil, err
	}
	p, err := atomicfile.OpenRoot(parent)
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.Close() }()
	if err := p.MkdirAll(base); err != nil {
		return nil, err
	}
	return p.OpenRoot(base)
}

// prepare removes old partial downloads and what interrupted runs left,
// and creates the staging area.
func (w *Workspace) prepare() error {
	if err := removeOldPartials(w.root); err != nil {
		return err
	}
	for _, old := range []string{stagingName, unpackDirName} {
		if err := w.root.RemoveAll(old); err != nil {
			return fmt.Errorf("remove what an interrupted run left: %w", err)
		}
	}
	return w.root.MkdirAll(stagingName)
}

// StagingDir is the directory staged files are created in.
func (w *Workspace) StagingDir() string { return w.staging }

// Close removes the staging area and anything left in it.
func (w *Workspace) Close() error {
	if w == nil || w.staging == "" {
		return nil
	}
	err := w.root.RemoveAll(stagingName)
	w.staging = ""
	if cerr := w.root.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("remove staging area: %w", err)
	}
	return nil
}

// CreateStaged creates an empty file in the staging area. The caller writes
// it, then closes it with SyncClose before publishing it.
func (w *Workspace) CreateStaged(name string) (*os.File, error) {
	if w.staging == "" {
		return nil, fmt.Errorf("create staging file for %s: the workspace is closed", name)
	}
	if strings.ContainsAny(name, `/\`) {
		return nil, fmt.Errorf("create staging file for %s: the name holds a path separator", name)
	}
	f, _, err := w.createStaged(name)
	return f, err
}

// createStaged creates a new file for name in the staging area, never
// through a link, and returns it with its path relative to the workspace.
func (w *Workspace) createStaged(name string) (*os.File, string, error) {
	f, rel, err := w.root.CreateNew(stagingName, name+"-")
	if err != nil {
		return nil, "", fmt.Errorf("create staging file for %s: %w", name, err)
	}
	return f, rel, nil
}

// Stage moves a complete partial download into the staging area under a
// new name for name, so nothing else (another package with the same bytes,
// a later run) uses it any more.
func (w *Workspace) Stage(partial, name string) (string, error) {
	from, ok := w.rel(partial)
	if !ok || path.Dir(from) != partialDirName {
		return "", fmt.Errorf("stage download %s: not a partial download of this workspace", partial)
	}
	if _, err := w.root.StatFile(from); err != nil {
		return "", fmt.Errorf("stage download %s: %w", filepath.Base(partial), err)
	}
	f, to, err := w.createStaged(name)
	if err != nil {
		return "", err
	}
	_ = f.Close()
	if err := w.root.Rename(from, to); err != nil {
		_ = w.root.Remove(to)
		return "", fmt.Errorf("stage download %s: %w", filepath.Base(partial), err)
	}
	return w.root.Path(to), nil
}

// rel returns the slash-separated path of a file of the workspace
// relative to its directory.
func (w *Workspace) rel(p string) (string, bool) {
	r, err := filepath.Rel(w.dir, p)
	if err != nil || !filepath.IsLocal(r) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

// Owns reports whether path is a staged file or a partial download of
// this workspace.
func (w *Workspace) Owns(path string) bool {
	dir := filepath.Dir(path)
	return path != "" && (dir == w.staging || dir == filepath.Join(w.dir, partialDirName))
}

// Discard removes a staged file or a partial download that is no longer
// needed (published, or refused). Any other path is left alone, and so is
// a link on the way to it.
func (w *Workspace) Discard(path string) {
	if rel, ok := w.rel(path); ok && w.Owns(path) {
		_ = w.root.Remove(rel)
	}
}

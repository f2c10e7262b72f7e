package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
type Workspace struct {
	dir     string // the private directory holding staging and partial
	staging string

	mu       sync.Mutex
	partials map[string]bool // partial downloads in use
}

// OpenWorkspace prepares the workspace in the private directory dir
// (created if needed): it removes partial downloads nobody touched for a
// week and what interrupted runs left in the staging and unpack areas,
// and creates an empty staging area. The caller holds the lock of
// the store dir belongs to, if any, so no live process uses them.
func OpenWorkspace(dir string) (*Workspace, error) {
	if err := MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	if err := removeOldPartials(dir); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	staging := filepath.Join(dir, "staging")
	for _, old := range []string{staging, filepath.Join(dir, unpackDirName)} {
		if err := os.RemoveAll(old); err != nil {
			return nil, fmt.Errorf("remove what an interrupted run left in %s: %w", old, err)
		}
	}
	if err := MkdirAll(staging); err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return &Workspace{dir: dir, staging: staging, partials: map[string]bool{}}, nil
}

// StagingDir is the directory staged files are created in.
func (w *Workspace) StagingDir() string { return w.staging }

// Close removes the staging area and anything left in it.
func (w *Workspace) Close() error {
	if w == nil || w.staging == "" {
		return nil
	}
	err := os.RemoveAll(w.staging)
	w.staging = ""
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
	f, err := os.CreateTemp(w.staging, name+"-*")
	if err != nil {
		return nil, fmt.Errorf("create staging file for %s: %w", name, err)
	}
	return f, nil
}

// Stage moves a complete partial download into the staging area under a
// new name for name, so nothing else (another package with the same bytes,
// a later run) uses it any more.
func (w *Workspace) Stage(partial, name string) (string, error) {
	f, err := w.CreateStaged(name)
	if err != nil {
		return "", err
	}
	staged := f.Name()
	_ = f.Close()
	if err := os.Rename(partial, staged); err != nil {
		_ = os.Remove(staged)
		return "", fmt.Errorf("stage download %s: %w", filepath.Base(partial), err)
	}
	return staged, nil
}

// Owns reports whether path is a staged file or a partial download of
// this workspace.
func (w *Workspace) Owns(path string) bool {
	dir := filepath.Dir(path)
	return path != "" && (dir == w.staging || dir == filepath.Join(w.dir, partialDirName))
}

// Discard removes a staged file or a partial download that is no longer
// needed (published, or refused). Any other path is left alone.
func (w *Workspace) Discard(path string) {
	if w.Owns(path) {
		_ = os.Remove(path)
	}
}

package layout

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// StagingDirName is the staging area older versions of tfmirror kept
// under a local mirror's root, shared by every run. A directory's lock
// excluded every other writer for the whole of those runs, so what is
// there when the lock is had was left by a killed run, and the lock's
// holder removes it (removeLeftovers).
const StagingDirName = PrivateDirName + "/staging"

// Workspace is the local disk one process works in: a staging area for
// downloads until they are verified and published, an area where
// packages are unpacked for a filesystem mirror, and the partial
// downloads a later run can resume. It is private to tfmirror and never
// part of a published tree. For a local output it lives in the output's
// private directory, so publishing a staged archive is a hard link; for
// a bucket or a registry it lives in the user's cache, in a directory
// named after the destinations, so the next run of the same build finds
// its partial downloads.
//
// A workspace directory is shared: builds and bundle imports on one
// host, into one destination or several, open workspaces in the same
// directory at the same time (two CI jobs on one runner, --shard workers
// on one host, an import staging without the destination's lock). So
// nothing in it belongs to the directory; what a process works on is
// its own, and a lock says whether its owner is alive (a prune stages
// nothing, and what any writer removes under a directory's lock,
// removeLeftovers, is never a run):
//   - Each Workspace is a run: run-ID/ (ID random) holds its staging
//     area and its unpack area, and run-ID.lock is locked
//     (atomicfile.Root.TryLock) before run-ID/ is made and stays locked
//     until Close has removed both. The operating system releases the
//     lock when the process dies, however it dies.
//   - OpenWorkspace removes the runs whose lock it can take: their owner
//     is dead (killed, crashed, the machine restarted), and no one else
//     can take the lock of a live run. It removes run-ID/ then
//     run-ID.lock while holding that lock, so a run's directory never
//     outlives its lock file; a run it cannot lock is never touched,
//     whatever its age.
//   - A partial download (partial/SHA256) is shared between runs, so an
//     interrupted build resumes it, but written by one process at a
//     time: OpenPartial locks its lock file (partial/SHA256.lock; a
//     download of the same bytes by another live process gets ok false
//     and stages its own file), and the lock is held until
//     ReleasePartial, after the file was staged or removed. Old partial
//     downloads are removed only when their lock can be had.
//
// Nothing here is guessed from ages or process ids, except the removal
// of partial downloads nobody touched for a week, which are locked first.
//
// Like a DirStore, it never follows a symbolic link in its directory: the
// directory itself, the runs, the partial downloads and what is in them
// must be real directories and regular files.
type Workspace struct {
	dir     string           // the private directory holding the runs and partial
	run     string           // this run's directory, relative to dir; "" once closed
	staging string           // its staging area (a full path)
	root    *atomicfile.Root // dir
	held    *os.File         // holds the lock of run + ".lock"

	mu       sync.Mutex
	partials map[string]*os.File // partial downloads in use, each with the file holding its lock
}

// runPrefix starts the name of each run's directory and lock file in a
// workspace directory; lockSuffix ends the lock file's.
const (
	runPrefix  = "run-"
	lockSuffix = ".lock"
)

// stagingName and unpackDirName are a run's staging area and the area
// where packages of an unpacked filesystem mirror are extracted before
// they appear, in its directory.
const (
	stagingName   = "staging"
	unpackDirName = "unpack"
)

// maxRunAttempts bounds the tries for a run name whose lock is free.
const maxRunAttempts = 10

// OpenWorkspace opens a workspace of its own for this process in the
// private directory dir (created if needed): it claims a new run, then
// removes what dead processes left (the runs whose lock it can take, and
// partial downloads nobody touched for a week and nobody holds). Close
// removes the run. Other processes may work in dir at the same time;
// nothing they hold is touched. dir must not be a link; its parent may
// be.
func OpenWorkspace(dir string) (*Workspace, error) {
	root, err := openPrivateDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	w := &Workspace{dir: dir, root: root, partials: map[string]*os.File{}}
	if err := w.claim(); err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("open workspace %s: %w", dir, err)
	}
	if err := w.removeDead(); err != nil {
		_ = w.Close()
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

// claim takes the lock of a new run and makes its directory with an
// empty staging area. The lock comes first: a run directory whose lock
// is free is a dead process's.
func (w *Workspace) claim() error {
	for range maxRunAttempts {
		run := runPrefix + randomID()
		held, err := w.root.TryLock(run + lockSuffix)
		if errors.Is(err, atomicfile.ErrLocked) {
			continue // another process's name, by a rare chance: take another
		}
		if err != nil {
			return err
		}
		// A dead run of the same name (rarer still) leaves nothing behind.
		err = w.root.RemoveAll(run)
		if err == nil {
			err = w.root.MkdirAll(run + "/" + stagingName)
		}
		if err != nil {
			_ = endRun(w.root, run, held)
			return err
		}
		w.run, w.held = run, held
		w.staging = w.root.Path(run + "/" + stagingName)
		return nil
	}
	return fmt.Errorf("no free run name after %d attempts", maxRunAttempts)
}

// randomID is a random part of a run's name.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// removeDead removes what dead processes left: runs whose lock can be
// taken, and old partial downloads nobody holds.
func (w *Workspace) removeDead() error {
	entries, err := w.root.ReadDir(".")
	if err != nil {
		return err
	}
	runs := map[string]bool{}
	for _, e := range entries {
		if run, ok := runName(e.Name()); ok && run != w.run {
			runs[run] = true
		}
	}
	for _, run := range slices.Sorted(maps.Keys(runs)) {
		if err := w.removeRun(run); err != nil {
			return err
		}
	}
	return removeOldPartials(w.root)
}

// runName returns the run a workspace entry belongs to (its directory or
// its lock file), if any.
func runName(name string) (string, bool) {
	if !strings.HasPrefix(name, runPrefix) {
		return "", false
	}
	return strings.TrimSuffix(name, lockSuffix), true
}

// removeRun removes the run if its owner is dead: its lock can be taken.
// The directory goes first, then the lock file, both while the lock is
// held, so no one else can take either for a live run meanwhile.
func (w *Workspace) removeRun(run string) error {
	held, err := w.root.TryLock(run + lockSuffix)
	if errors.Is(err, atomicfile.ErrLocked) {
		return nil // alive, or being removed by another process
	}
	if err != nil {
		return fmt.Errorf("find what a dead run left: %w", err)
	}
	if err := endRun(w.root, run, held); err != nil {
		return fmt.Errorf("remove what a dead run left: %w", err)
	}
	return nil
}

// endRun removes the run's directory, then its lock file, while held
// holds the lock, then releases it. The lock file goes only once the
// directory is gone, so a run directory never outlives its lock file. A
// system that cannot remove an open file (Windows) keeps the lock file,
// empty and free, for the next workspace to remove.
func endRun(t *atomicfile.Root, run string, held *os.File) error {
	defer func() { _ = held.Close() }()
	if err := t.RemoveAll(run); err != nil {
		return err
	}
	_ = t.Remove(run + lockSuffix)
	return nil
}

// StagingDir is the directory staged files are created in.
func (w *Workspace) StagingDir() string { return w.staging }

// Close ends the run: it removes its directory (the staging and unpack
// areas and anything left in them), releases the partial downloads it
// still holds (they stay for a later run), then removes and releases its
// lock file.
func (w *Workspace) Close() error {
	if w == nil || w.run == "" {
		return nil
	}
	w.mu.Lock()
	for digest, held := range w.partials {
		if held != nil {
			unlockPartial(w.root, partialDirName+"/"+digest, held)
		}
		delete(w.partials, digest)
	}
	w.mu.Unlock()
	err := endRun(w.root, w.run, w.held)
	w.run, w.staging, w.held = "", "", nil
	if cerr := w.root.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("remove staging area: %w", err)
	}
	return nil
}

// unpackDir is the run's area for unpacking packages.
func (w *Workspace) unpackDir() string { return w.root.Path(w.run + "/" + unpackDirName) }

// CreateStaged creates an empty file in the staging area. The caller writes
// it, then closes it with SyncClose before publishing it.
func (w *Workspace) CreateStaged(name string) (*os.File, error) {
	if w.run == "" {
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
	f, rel, err := w.root.CreateNew(w.run+"/"+stagingName, name+"-")
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

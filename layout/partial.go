package layout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/tfmirror/tfmirror/internal/atomicfile"
)

// partialDirName, in a workspace, holds downloads interrupted by a failed
// or killed run, named by the SHA-256 their complete bytes must have, so
// the next run can resume them. Their content is checked against that
// digest when complete.
const partialDirName = "partial"

// partialMaxAge is how long an untouched partial download is kept.
const partialMaxAge = 7 * 24 * time.Hour

// OpenPartial opens the partial download for an archive whose complete
// SHA-256 is digest (hex), creating it if needed, positioned at its end.
// It returns the file and how many bytes it already holds. ok is false
// when another download of the same bytes is using it; the caller then
// stages the download with CreateStaged instead. The name is a digest,
// never a path.
//
// The file is opened with O_NOFOLLOW: a link, or anything but a regular
// file, at its name (or a link in place of the partial directory) is an
// error naming the path, never written through.
func (t *Workspace) OpenPartial(digest string) (f *os.File, size int64, ok bool, err error) {
	if !fs.ValidPath(digest) || strings.ContainsAny(digest, `/\`) {
		return nil, 0, false, fmt.Errorf("open partial download %q: not a file name", digest)
	}
	t.mu.Lock()
	if t.partials[digest] {
		t.mu.Unlock()
		return nil, 0, false, nil
	}
	t.partials[digest] = true
	t.mu.Unlock()
	f, size, err = t.openPartial(digest)
	if err != nil {
		t.ReleasePartial(digest)
		return nil, 0, false, fmt.Errorf("open partial download %s: %w", digest, err)
	}
	return f, size, true, nil
}

// openPartial opens (creating it if needed) the partial download named
// digest, positioned at its end.
func (t *Workspace) openPartial(digest string) (*os.File, int64, error) {
	if err := t.root.MkdirAll(partialDirName); err != nil {
		return nil, 0, err
	}
	f, err := t.root.OpenFile(partialDirName+"/"+digest, os.O_RDWR|os.O_CREATE, atomicfile.FileMode)
	if err != nil {
		return nil, 0, err
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// ReleasePartial ends this run's use of a partial download (which stays on
// disk for a later run, unless the caller removed or published it).
func (t *Workspace) ReleasePartial(digest string) {
	t.mu.Lock()
	delete(t.partials, digest)
	t.mu.Unlock()
}

// removeOldPartials deletes partial downloads nobody touched for a week.
// A link in place of the partial directory is an error; links and other
// entries in it are never followed (a link is removed like a file, by
// its own age).
func removeOldPartials(t *atomicfile.Root) error {
	entries, err := t.ReadDir(partialDirName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // none yet
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && time.Since(info.ModTime()) > partialMaxAge {
			if err := t.Remove(partialDirName + "/" + e.Name()); err != nil {
				return fmt.Errorf("remove old partial download: %w", err)
			}
		}
	}
	return nil
}

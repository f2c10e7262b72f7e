package layout

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
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
func (t *Workspace) OpenPartial(digest string) (f *os.File, size int64, ok bool, err error) {
	t.mu.Lock()
	if t.partials[digest] {
		t.mu.Unlock()
		return nil, 0, false, nil
	}
	t.partials[digest] = true
	t.mu.Unlock()
	dir := filepath.Join(t.dir, partialDirName)
	if err := MkdirAll(dir); err != nil {
		t.ReleasePartial(digest)
		return nil, 0, false, err
	}
	f, err = os.OpenFile(filepath.Join(dir, digest), os.O_RDWR|os.O_CREATE, FileMode)
	if err == nil {
		size, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		if f != nil {
			_ = f.Close()
		}
		t.ReleasePartial(digest)
		return nil, 0, false, fmt.Errorf("open partial download %s: %w", digest, err)
	}
	return f, size, true, nil
}

// ReleasePartial ends this run's use of a partial download (which stays on
// disk for a later run, unless the caller removed or published it).
func (t *Workspace) ReleasePartial(digest string) {
	t.mu.Lock()
	delete(t.partials, digest)
	t.mu.Unlock()
}

// removeOldPartials deletes partial downloads nobody touched for a week.
func removeOldPartials(workspace string) error {
	dir := filepath.Join(workspace, partialDirName)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // none yet
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && time.Since(info.ModTime()) > partialMaxAge {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("remove old partial download: %w", err)
			}
		}
	}
	return nil
}

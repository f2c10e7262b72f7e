package modfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/httpx"
)

// How often a git command's work area is looked at: after each look, twice
// as long as the look took, between these bounds.
const (
	minWatchInterval = 20 * time.Millisecond
	maxWatchInterval = 250 * time.Millisecond
)

// area is a directory a git command writes into and what it may hold
// while the command runs.
type area struct {
	dir        string
	skip       string // a name at the top of dir that is not counted; "" for none
	what       string // "the repository", "the checkout", for messages
	maxBytes   int64  // the sum of the regular files' sizes
	maxEntries int
}

// areaError says that a work area went past its limits.
type areaError struct {
	what  string
	limit string
}

func (e *areaError) Error() string {
	return fmt.Sprintf("%s went past the module limit of %s", e.what, e.limit)
}

// measure walks the area without following links and returns an
// *areaError as soon as it holds more than its limits. Entries that vanish
// while it walks (git renames its temporary files) are skipped.
func (a *area) measure() error {
	var size int64
	var entries int
	err := filepath.WalkDir(a.dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case p == a.dir:
			return nil
		case a.skip != "" && d.IsDir() && filepath.Dir(p) == a.dir && d.Name() == a.skip:
			return fs.SkipDir
		}
		if entries++; entries > a.maxEntries {
			return &areaError{what: a.what, limit: fmt.Sprintf("%d entries", a.maxEntries)}
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone since it was listed
		}
		if size += info.Size(); size > a.maxBytes {
			return &areaError{what: a.what, limit: fmt.Sprintf("%d bytes", a.maxBytes)}
		}
		return nil
	})
	var over *areaError
	if errors.As(err, &over) {
		return over
	}
	return nil // an area that cannot be read is left to the command and checkTree
}

// watch looks at the area until the returned stop is called, and calls
// kill with an *areaError as soon as the area holds more than its limits.
// stop looks once more (the command may have written its last bytes since
// the last look) and returns the *areaError, if any.
func (a *area) watch(kill context.CancelCauseFunc) (stop func() error) {
	quit := make(chan struct{})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		over error
	)
	wg.Go(func() {
		timer := time.NewTimer(0)
		defer timer.Stop()
		for {
			select {
			case <-quit:
				return
			case <-timer.C:
			}
			start := time.Now()
			if err := a.measure(); err != nil {
				mu.Lock()
				over = err
				mu.Unlock()
				kill(err)
				return
			}
			timer.Reset(min(max(2*time.Since(start), minWatchInterval), maxWatchInterval))
		}
	})
	return func() error {
		close(quit)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if over != nil {
			return over
		}
		return a.measure()
	}
}

// maxTreeRecord bounds one entry of git ls-tree's output (a path is at
// most a few kilobytes).
const maxTreeRecord = 64 << 10

// treeSizer reads "git ls-tree -r -t -l -z" as git writes it, adding up
// the entries and the sizes of the files, and fails (stopping git) as soon
// as they are more than the limits allow.
type treeSizer struct {
	limits  hashing.ModuleLimits
	buf     []byte
	entries int
	size    int64
	err     error
}

func (t *treeSizer) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, 0)
		if i < 0 {
			break
		}
		if err := t.record(string(t.buf[:i])); err != nil {
			t.err = err
			return 0, err
		}
		t.buf = t.buf[i+1:]
	}
	if len(t.buf) > maxTreeRecord {
		t.err = fmt.Errorf("git ls-tree wrote an entry of more than %d bytes", maxTreeRecord)
		return 0, t.err
	}
	t.buf = append([]byte(nil), t.buf...) // let what was read go
	return len(p), nil
}

// record counts one entry: "<mode> <type> <object> <size>\t<path>", the
// size "-" for trees and submodules.
func (t *treeSizer) record(rec string) error {
	meta, _, ok := strings.Cut(rec, "\t")
	fields := strings.Fields(meta)
	if !ok || len(fields) != 4 {
		return fmt.Errorf("git ls-tree wrote %q, not an entry", tail(escapeControl(rec), 200))
	}
	if t.entries++; t.entries > t.limits.MaxFiles {
		return fmt.Errorf("its files and directories are more than the module limit of %d entries", t.limits.MaxFiles)
	}
	if fields[1] == "commit" {
		// A submodule: its files are in another repository, which
		// tfmirror does not fetch (OpenTofu's git does); published without
		// them the module would be incomplete.
		_, path, _ := strings.Cut(rec, "\t")
		return fmt.Errorf("%s is a git submodule, which tfmirror does not fetch: vendor its files into the repository, or publish the module as an archive", excerpt.Quote(path))
	}
	if fields[1] != "blob" {
		return nil
	}
	n, err := strconv.ParseInt(fields[3], 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("git ls-tree wrote the size %q", fields[3])
	}
	if n > t.limits.MaxBytes-t.size {
		return fmt.Errorf("its files hold more than the module limit of %d bytes", t.limits.MaxBytes)
	}
	t.size += n
	return nil
}

// finish checks that git's output ended with a whole entry.
func (t *treeSizer) finish() error {
	if t.err == nil && len(t.buf) > 0 {
		return errors.New("git ls-tree's output ended in the middle of an entry")
	}
	return t.err
}

// lowSpeed is the "-c" arguments that make git's HTTP transfers (curl)
// give up as the policy's downloads do: one slower than SpeedLimit bytes a
// second (1 without a speed limit: a transfer that stalls) for the shorter
// of SpeedTime and StallTimeout, in whole seconds. A policy with neither
// limit sets nothing.
func lowSpeed(p httpx.Policy) []string {
	var window time.Duration
	limit := int64(1)
	if p.SpeedLimit > 0 && p.SpeedTime > 0 {
		window, limit = p.SpeedTime, p.SpeedLimit
	}
	if p.StallTimeout > 0 && (window == 0 || p.StallTimeout < window) {
		window = p.StallTimeout
	}
	if window <= 0 {
		return nil
	}
	secs := int64(math.Ceil(window.Seconds()))
	return []string{"-c", "http.lowSpeedLimit=" + strconv.FormatInt(limit, 10), "-c", "http.lowSpeedTime=" + strconv.FormatInt(secs, 10)}
}

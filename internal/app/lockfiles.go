package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/lockfile"
	"github.com/tfmirror/tfmirror/internal/tfconfig"
	"github.com/tfmirror/tfmirror/mirror"
)

// LockFile is what writing one configuration's lock file did.
type LockFile struct {
	Path      string
	Providers int
	Unchanged bool
}

// WriteLockFiles computes every configuration's lock file from the
// mirror the locker reads, then writes them: none unless every one could
// be computed (lock, build --write-lock-files).
func WriteLockFiles(ctx context.Context, l *mirror.Locker, cfgs []tfconfig.Configuration, platforms []addrs.Platform) ([]LockFile, error) {
	var updates []lockfile.Update
	var errs []error
	for _, c := range cfgs {
		u, err := lockfile.Compute(ctx, l, c.Dir, c.Needs, c.Lock, platforms)
		if err != nil {
			errs = append(errs, err) // each names its configuration
			continue
		}
		updates = append(updates, u)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("no lock file was written:\n%w", err)
	}
	out := make([]LockFile, 0, len(updates))
	for _, u := range updates {
		if err := u.Write(); err != nil {
			return out, err
		}
		out = append(out, LockFile{Path: u.Path, Providers: u.Providers(), Unchanged: u.Unchanged()})
	}
	return out, nil
}

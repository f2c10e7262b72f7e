// Package replica is the replica command: it (re)writes the static copy
// of the registry protocols in a built mirror (a directory or a bucket),
// and the catalog page, through views.Refresh.
package replica

import (
	"context"

	"github.com/tfmirror/tfmirror/internal/app"
	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/internal/signing"
	"github.com/tfmirror/tfmirror/internal/views"
	"github.com/tfmirror/tfmirror/layout"
)

// Options say which mirror.
type Options struct {
	Site    string
	Flags   settings.Flags
	Process settings.Process
}

// Report is what the replica holds.
type Report = views.Report

// Run writes the replica under the mirror's publish lock (a bucket's is
// taken at the first write, so an unchanged replica makes no write
// request). The report is set when anything was written, also when some
// release no longer verifies (then left out, and in the error).
func Run(ctx context.Context, opts Options) (*Report, error) {
	ref, _, s, err := app.Locate(opts.Site, opts.Flags, opts.Process)
	if err != nil {
		return nil, err
	}
	d, err := endpoint.OpenTree(ctx, ref, s)
	if err != nil {
		return nil, err
	}
	unlock, err := d.Lock(ctx, s.LockTimeout, layout.Publish)
	if err != nil {
		return nil, err
	}
	report, err := views.Refresh(ctx, d.Tree, views.Options{Providers: true, Trust: replica.Trust{Checker: signing.Checker{}, Policy: s.Trust}, Sign: s.SignKey})
	if uerr := unlock(); err == nil {
		err = uerr
	}
	return report, err
}

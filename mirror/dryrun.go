package mirror

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"
)

// StatusPlanned marks a package a dry run would download.
const StatusPlanned Status = "download"

// DryRun reports what Execute would do with plan, making only metadata
// requests (download documents, and the archive sizes if their locations
// can tell them: Sizer) and writing nothing.
func (b *Builder) DryRun(ctx context.Context, plan *Plan) *Report {
	b.report = &Report{Warnings: b.planWarnings, Deprecations: b.listedDeprecations()}
	b.meta = make(chan struct{}, b.metaParallel())
	var g errgroup.Group
	g.SetLimit(b.parallel())
	for _, r := range plan.releases {
		g.Go(func() error {
			b.dryRelease(ctx, r)
			return nil
		})
	}
	_ = g.Wait()
	b.report.sort()
	return b.report
}

func (b *Builder) dryRelease(ctx context.Context, r release) {
	for _, k := range r.kept {
		b.emit(Result{Package: Package{Provider: r.req.Provider, Version: r.version, Platform: k.plat}, Status: StatusPresent, Bytes: k.size, KeyID: k.keyID})
	}
	for _, c := range b.lookupPlatforms(ctx, r, &failures{}) {
		if size, same := b.onDisk(c); same {
			b.emit(Result{Package: c.pkg, Status: StatusPresent, Bytes: size})
			continue
		}
		res := Result{Package: c.pkg, Status: StatusPlanned}
		if s, ok := c.meta.Archive.(Sizer); ok {
			size, err := s.Size(ctx)
			if err != nil && !errors.Is(err, context.Canceled) {
				res.Reason = "size unknown: " + err.Error()
			}
			res.Bytes = size
		}
		b.emit(res)
	}
}

// onDisk reports whether a local destination already has the package's
// bytes.
func (b *Builder) onDisk(c candidate) (int64, bool) {
	_, size, ok := b.localCopy(c.pkg, c.meta)
	return size, ok
}

package bundle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// publish merges the verified staged mirror into tree under the Refuse
// policy: every file is planned (and every existing document read and
// merged) before anything is written, so a conflict refuses the bundle
// with the destination untouched; then files are published in the tree's
// publish order.
func publish(ctx context.Context, tree *layout.Tree, staged *layout.Tree, report *ImportReport) error {
	rs, err := releases(ctx, staged)
	if err != nil {
		return err
	}
	ms, err := moduleReleases(ctx, staged)
	if err != nil {
		return err
	}
	warnings, err := stagedWarnings(ctx, staged, rs)
	if err != nil {
		return err
	}
	if report.Added, err = added(ctx, tree, rs, ms); err != nil {
		return err
	}
	pr, err := tree.PublishMirror(ctx, layout.Refuse, rs, ms)
	var conflict *layout.ConflictError
	if errors.As(err, &conflict) {
		problems := make([]mirror.Problem, 0, len(conflict.Conflicts))
		for _, c := range conflict.Conflicts {
			problems = append(problems, mirror.Problem(c))
		}
		return refusedAll("bundle", problems)
	}
	report.Written, report.Unchanged = pr.Written, pr.Unchanged
	if err != nil {
		return err
	}
	report.Warnings = append(report.Warnings, recordWarnings(ctx, tree, warnings)...)
	return nil
}

// providerWarnings are the registry warnings a bundle keeps, by provider:
// an entry (nil or not) for every provider it holds.
type providerWarnings map[addrs.Provider][]string

// stagedWarnings reads the warnings the staged mirror keeps of each
// provider of its releases rs, before anything is published: a
// warnings.json that does not parse refuses the bundle.
func stagedWarnings(ctx context.Context, staged *layout.Tree, rs []layout.Release) (providerWarnings, error) {
	out := providerWarnings{}
	for _, r := range rs {
		if _, done := out[r.Provider]; done {
			continue
		}
		w, err := staged.ReadWarnings(ctx, r.Provider)
		if err != nil {
			return nil, refused(MirrorDir+"/"+layout.WarningsPath(r.Provider), "%v", err)
		}
		out[r.Provider] = w
	}
	return out, nil
}

// recordWarnings makes the destination keep, for every provider of the
// bundle, the warnings the bundle keeps: the bundle is the connected
// mirror's latest word on them, so a provider it holds without warnings
// has its kept ones removed. Providers the bundle does not hold keep
// theirs. The mirror is published by then: a failure is a warning, as
// it is for a build.
func recordWarnings(ctx context.Context, tree *layout.Tree, warnings providerWarnings) []string {
	var failed []string
	for _, p := range slices.SortedFunc(maps.Keys(warnings), func(a, b addrs.Provider) int { return strings.Compare(a.String(), b.String()) }) {
		if err := tree.RecordWarnings(ctx, p, warnings[p]); err != nil {
			failed = append(failed, fmt.Sprintf("the bundle was imported, but the registry's warnings of %s were not kept in %s: %v", p, tree.Location(), err))
		}
	}
	return failed
}

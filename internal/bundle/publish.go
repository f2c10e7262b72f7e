package bundle

import (
	"context"
	"errors"

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
	return nil
}

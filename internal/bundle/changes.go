package bundle

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"

	"github.com/tfmirror/tfmirror/layout"
	"github.com/tfmirror/tfmirror/mirror"
)

// changeProblems checks the change records of a mirror to bundle or a
// staged bundle (layout.Tree.CheckChanges): an index or a record that
// fails its checks refuses the bundle, as any other file would. Problems
// are reported at prefix+path.
func changeProblems(ctx context.Context, tree *layout.Tree, prefix string) []mirror.Problem {
	found := tree.CheckChanges(ctx)
	var problems []mirror.Problem
	for _, rel := range slices.Sorted(maps.Keys(found)) {
		problems = append(problems, mirror.Problem{Path: prefix + rel, Message: found[rel].Error()})
	}
	return problems
}

// added lists what publishing rs and ms adds to tree: each provider
// version with the platforms tree does not list yet, each module version
// it does not hold.
func added(ctx context.Context, tree *layout.Tree, rs []layout.Release, ms []layout.ModuleRelease) ([]layout.ChangedPackage, error) {
	var out []layout.ChangedPackage
	for _, r := range rs {
		doc, err := tree.ReadVersion(ctx, r.Provider, r.Version)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, layout.ErrNotInMirror) {
			return nil, err
		}
		cp := layout.ChangedPackage{Package: r.Provider.String(), Version: r.Version.String()}
		for _, a := range r.Archives {
			if _, ok := doc.Archives[a.Platform.String()]; !ok {
				cp.Platforms = append(cp.Platforms, a.Platform.String())
			}
		}
		if len(cp.Platforms) > 0 {
			out = append(out, cp)
		}
	}
	for _, m := range ms {
		_, err := tree.ReadModuleRecord(ctx, m.Module, m.Version)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, layout.ChangedPackage{Package: "module " + m.Module.String(), Version: m.Version.String()})
		case err != nil:
			return nil, err
		}
	}
	return out, nil
}

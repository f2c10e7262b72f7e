package endpoint

import (
	"context"
	"fmt"

	"github.com/tfmirror/tfmirror/internal/inputerr"
	"github.com/tfmirror/tfmirror/layout"
)

// NoMirror is the input error of a command that reads a mirror, named at
// ref, that holds none: a wrong directory, URL or prefix, not a mirror
// without faults.
func NoMirror(ref Ref) error {
	return inputerr.Wrap(fmt.Errorf("%s holds no mirror: no %s, no provider's index.json (HOST/NAMESPACE/TYPE/index.json) and no module was found; name the directory, URL or bucket prefix a build published to", ref, layout.CatalogPath))
}

// NoRepositories is NoMirror for a registry: none of the repositories the
// template names for the providers asked about holds a release.
func NoRepositories(ref Ref, providers int) error {
	return inputerr.Wrap(fmt.Errorf("%s holds no mirror: none of the %d repositories the template names for the manifest's providers holds a release; check the registry and the template", ref, providers))
}

// RequireMirror refuses, with NoMirror, a tree that holds neither a
// catalog.json (every tree tfmirror writes has one, even once emptied)
// nor a provider or module another tool's mirror would hold. A tree that
// cannot be read is left to the command's own reads to report.
func RequireMirror(ctx context.Context, ref Ref, tree *layout.Tree) error {
	if _, err := tree.Reader().Stat(ctx, layout.CatalogPath); err == nil {
		return nil
	}
	if tree.Empty(ctx) {
		return NoMirror(ref)
	}
	return nil
}

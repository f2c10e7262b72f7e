package mirror

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

// tagged is a destination that, like a registry, keeps no module records
// and refuses a version's tag naming another package.
type tagged struct{ layout.TreeDestination }

func (d tagged) HeldModule(ctx context.Context, m addrs.Module, v addrs.Version) (layout.HeldModule, error) {
	h, err := d.TreeDestination.HeldModule(ctx, m, v)
	h.Record = nil
	return h, err
}

func (d tagged) PublishModule(ctx context.Context, r layout.ModuleRelease) error {
	if h, err := d.TreeDestination.HeldModule(ctx, r.Module, r.Version); err == nil && h.Found && h.SHA256 != r.Record.SHA256 {
		return &layout.ConflictError{Conflicts: []layout.Conflict{{Path: r.Module.String() + ":" + r.Version.String(), Message: "the tag names another package"}}}
	}
	return d.TreeDestination.PublishModule(ctx, r)
}

// A version whose upstream moved, refused by the destination that holds
// it, reaches no other destination of the same build, whatever their
// order: the destination that holds a package of the version is asked
// first.
func TestModuleRefusedByOneDestinationReachesNone(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "# one"})
	req := ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1}
	holding, fresh := t.TempDir(), t.TempDir()
	if err := buildModules(t, holding, f, false, false, req).Err(); err != nil {
		t.Fatal(err)
	}
	f.files["registry.opentofu.org/acme/net/aws@1.0.0"]["main.tf"] = "# moved"

	open := func(root string) *layout.Dir {
		tree, err := layout.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tree.Close() })
		return tree
	}
	freshTree, holdingTree := open(fresh), open(holding)
	b := &ModuleBuilder{Source: f, Fetcher: f, Calls: f, Work: freshTree.Workspace,
		Dests: []Destination{freshTree.Destination(), tagged{holdingTree.Destination()}}}
	r := &Report{}
	b.Build(context.Background(), []ModuleRequirement{req}, r)
	if r.Err() == nil {
		t.Fatal("the build took a moved version the registry destination refuses")
	}
	m, v := addrs.MustParseModule("acme/net/aws"), addrs.MustParseVersion("1.0.0")
	if _, err := os.Stat(filepath.Join(fresh, layout.ModuleArchivePath(m, v))); !os.IsNotExist(err) {
		t.Errorf("the fresh destination took the version the other refused (%v)", err)
	}
}

// A module the manifest names that the registry does not know is the
// user's input error (nothing written); one a mirrored module calls is
// its upstream's, and the module that calls it stays published (exit 1).
func TestUnknownCalledModuleIsNoInputError(t *testing.T) {
	f := newFakeModules()
	f.add("acme/net/aws", "1.0.0", map[string]string{"main.tf": "# net", "CALLS": "acme/gone/aws ~> 1.0\n"})
	root := t.TempDir()
	r := buildModules(t, root, f, false, false, ModuleRequirement{Module: addrs.MustParseModule("acme/net/aws"), Newest: 1})
	var merr *ModuleError
	if err := r.Err(); !errors.As(err, &merr) || merr.Input || merr.Module.String() != "registry.opentofu.org/acme/gone/aws" {
		t.Errorf("an unknown module called by a mirrored one: %v (%+v), want a module error that is not the user's input", err, merr)
	}
	r = buildModules(t, t.TempDir(), f, false, false, ModuleRequirement{Module: addrs.MustParseModule("acme/gone/aws"), Newest: 1})
	if err := r.Err(); !errors.As(err, &merr) || !merr.Input {
		t.Errorf("an unknown module the manifest names: %v, want the user's input error", err)
	}
}

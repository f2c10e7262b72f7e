package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/layout"
)

// maxDownloadDoc bounds a download document Check reads.
const maxDownloadDoc = 1 << 20

// Check reads the download documents of the tree's registry replica, for
// the packages and module versions the tree holds, and reports each that
// sends clients anywhere but to the tree's own file: OpenTofu installs
// through these documents, so one edited to point off-site would hand out
// another package. A module document may name an oci:// location
// (--oci-module-locations). A document the replica lacks is not a problem
// (the writer leaves out what it cannot vouch for). A mirror that cannot
// be listed (over HTTP) is not checked.
func Check(ctx context.Context, tree *layout.Tree) ([]layout.Problem, error) {
	hasProviders, hasModules, err := Holds(ctx, tree)
	if errors.Is(err, layout.ErrReadOnly) {
		return nil, nil // a mirror over HTTP cannot be listed: its replica is not known
	}
	if err != nil {
		return nil, err
	}
	var out []layout.Problem
	if hasProviders {
		found, err := checkProviders(ctx, tree)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	if hasModules {
		found, err := checkModules(ctx, tree)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

func checkProviders(ctx context.Context, tree *layout.Tree) ([]layout.Problem, error) {
	var out []layout.Problem
	providers, err := tree.Providers(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range providers {
		versions, err := tree.Versions(ctx, p)
		if errors.Is(err, layout.ErrNotInMirror) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			l := tree.ListVersion(ctx, p, v)
			for _, plat := range slices.SortedFunc(maps.Keys(l.Packages), func(a, b addrs.Platform) int { return strings.Compare(a.String(), b.String()) }) {
				doc := DownloadPath(p, v, plat)
				var d regproto.Download
				if ok, prob := readDoc(ctx, tree, doc, &d); !ok {
					out = append(out, prob...)
					continue
				}
				if want := relativeURL(doc, layout.ArchivePath(p, v, plat)); d.DownloadURL != want {
					out = append(out, layout.Problem{Path: doc, Message: fmt.Sprintf("the replica sends clients to %s, not to the mirror's %s", excerpt.Quote(d.DownloadURL), want)})
				}
			}
		}
	}
	return out, nil
}

func checkModules(ctx context.Context, tree *layout.Tree) ([]layout.Problem, error) {
	var out []layout.Problem
	modules, err := tree.Modules(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range modules {
		versions, err := tree.ModuleVersions(ctx, m)
		if err != nil {
			continue // verify reports it
		}
		for _, v := range versions {
			rec, err := tree.ReadModuleRecord(ctx, m, v)
			if err != nil {
				continue // verify reports it
			}
			doc := ModuleDownloadPath(m, v)
			var d regproto.ModuleDownload
			if ok, prob := readDoc(ctx, tree, doc, &d); !ok {
				out = append(out, prob...)
				continue
			}
			if want := ModuleLocation(m, v, rec.Subdir); d.Location != want && !strings.HasPrefix(d.Location, "oci://") {
				out = append(out, layout.Problem{Path: doc, Message: fmt.Sprintf("the replica sends clients to %s, not to the mirror's %s", excerpt.Quote(d.Location), want)})
			}
		}
	}
	return out, nil
}

// readDoc decodes the document at rel into v: false with no problem when
// the replica has none, false with the problem when it cannot be read.
func readDoc(ctx context.Context, tree *layout.Tree, rel string, v any) (bool, []layout.Problem) {
	data, err := tree.Reader().ReadFile(ctx, rel, maxDownloadDoc)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		return false, []layout.Problem{{Path: rel, Message: fmt.Sprintf("the replica's download document cannot be read: %v", err)}}
	}
	return true, nil
}

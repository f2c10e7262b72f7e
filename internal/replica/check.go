package replica

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Check reads every download document of the tree's registry replica and
// reports each that sends clients anywhere but to the tree's own file for
// the package or module version its path names: OpenTofu installs through
// these documents, so one edited to point off-site would hand out another
// package. A module document may name an oci:// location
// (--oci-module-locations). A mirror that cannot be listed (over HTTP) is
// not checked.
func Check(ctx context.Context, tree *layout.Tree) ([]layout.Problem, error) {
	moduleProblems, moduleDocs, err := checkModules(ctx, tree)
	if err != nil {
		return nil, err
	}
	files, err := tree.List(ctx, Dir)
	if errors.Is(err, layout.ErrReadOnly) {
		return moduleProblems, nil // a mirror over HTTP cannot be listed: its provider replica is not known
	}
	if err != nil {
		return nil, fmt.Errorf("registry replica: %w", err)
	}
	out := moduleProblems
	for _, doc := range files {
		if strings.HasSuffix(doc, ".nginx.conf") && doc != NginxPath {
			// examples/nginx includes every replica/*.nginx.conf.
			out = append(out, layout.Problem{Path: doc, Message: "an nginx configuration fragment tfmirror did not write: the example nginx configuration includes every replica/*.nginx.conf, so it could answer clients for the mirror; the next replica write removes it"})
			continue
		}
		target, module, ok := downloadTarget(doc)
		if !ok {
			continue
		}
		var sent string
		switch loc, read := moduleDocs[doc]; {
		case read && loc == nil:
			continue // checkModules said it cannot be read
		case read:
			sent, err = *loc, nil
		case module:
			var d regproto.ModuleDownload
			err = readDoc(ctx, tree, doc, &d)
			sent = d.Location
		default:
			var d regproto.Download
			err = readDoc(ctx, tree, doc, &d)
			sent = d.DownloadURL
		}
		switch {
		case err != nil:
			out = append(out, layout.Problem{Path: doc, Message: fmt.Sprintf("the replica's download document cannot be read: %v", err)})
		case sent == target, module && strings.HasPrefix(sent, "oci://"),
			module && strings.HasPrefix(sent, target+"//") && !strings.Contains(sent[len(target):], ".."):
		default:
			out = append(out, layout.Problem{Path: doc, Message: fmt.Sprintf("the replica sends clients to %s, not to the mirror's %s", excerpt.Quote(sent), target)})
		}
	}
	return out, nil
}

// checkModules checks that the module registry offers every module version
// the tree holds, as clients find it: the host's discovery document names
// modules.v1, the module's versions document lists the version, its
// download document is there, and so is the nginx fragment that gives
// Terraform the location. Each document is read by its path, so a mirror
// over HTTP is checked too. It returns the download documents it read,
// each with the location it gives (nil: unreadable, a problem said), for
// Check not to read them again.
func checkModules(ctx context.Context, tree *layout.Tree) ([]layout.Problem, map[string]*string, error) {
	modules, err := tree.Modules(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("module registry: list modules: %w", err)
	}
	var out []layout.Problem
	docs := map[string]*string{} // download documents read: their location, nil when unreadable
	problem := func(rel, format string, args ...any) {
		out = append(out, layout.Problem{Path: rel, Message: fmt.Sprintf(format, args...)})
	}
	hosts := map[addrs.Hostname]bool{}
	// The nginx fragment the documents read call for, in the order a
	// build writes it.
	var nginx strings.Builder
	nginx.WriteString(nginxHeader)
	unread := false // a download document: its problem is said already
	for _, m := range modules {
		versions, err := tree.ModuleVersions(ctx, m)
		if err != nil {
			return nil, nil, fmt.Errorf("module registry: %s: %w", m.ForDisplay(), err)
		}
		if len(versions) == 0 {
			continue
		}
		hosts[m.Host] = true
		var list regproto.ModuleVersions
		if err := readDoc(ctx, tree, ModuleVersionsPath(m), &list); err != nil {
			problem(ModuleVersionsPath(m), "the module registry's versions document of %s cannot be read, so clients find none of its versions: %v", m.ForDisplay(), err)
		}
		offered := map[string]bool{}
		for _, l := range list.Modules {
			for _, v := range l.Versions {
				offered[v.Version] = true
			}
		}
		for _, v := range slices.Backward(versions) {
			if len(list.Modules) > 0 && !offered[v.String()] {
				problem(ModuleVersionsPath(m), "does not list %s %s, which the mirror holds", m.ForDisplay(), v)
			}
			var d regproto.ModuleDownload
			if err := readDoc(ctx, tree, ModuleDownloadPath(m, v), &d); err != nil {
				problem(ModuleDownloadPath(m, v), "the download document of %s %s cannot be read, so clients cannot install it: %v", m.ForDisplay(), v, err)
				unread, docs[ModuleDownloadPath(m, v)] = true, nil
				continue
			}
			docs[ModuleDownloadPath(m, v)] = &d.Location
			if block, ok := nginxBlock(m, v, d.Location); ok {
				nginx.WriteString(block)
			}
		}
	}
	for _, h := range slices.Sorted(maps.Keys(hosts)) {
		var doc regproto.Discovery
		if err := readDoc(ctx, tree, DiscoveryPath(h), &doc); err != nil {
			problem(DiscoveryPath(h), "the discovery document of %s cannot be read, so clients find no module registry there: %v", h, err)
		} else if doc[regproto.ModulesV1] != "/"+ModuleServicesPath(h) {
			problem(DiscoveryPath(h), "names %s as %s's module registry, not the mirror's /%s", excerpt.Quote(doc[regproto.ModulesV1]), h, ModuleServicesPath(h))
		}
	}
	if len(hosts) > 0 {
		data, err := tree.Reader().ReadFile(ctx, NginxPath, maxNginxFragment)
		switch {
		case err != nil:
			problem(NginxPath, "the nginx fragment that gives Terraform each module's location (X-Terraform-Get) cannot be read: %v", err)
		case string(data) != nginx.String() && !unread:
			problem(NginxPath, "the nginx fragment is not the one the module registry's download documents call for: Terraform behind nginx reads the location it sends (X-Terraform-Get), which may point elsewhere; run tfmirror replica to write it again")
		}
	}
	return out, docs, nil
}

// downloadTarget is where the download document at rel must send clients
// (relative to it), from what its path names: a provider package
// (replica/HOST/v1/providers/NS/TYPE/VERSION/download/OS/ARCH) or a
// module version (replica/HOST/v1/modules/NS/NAME/SYSTEM/VERSION/download).
func downloadTarget(rel string) (target string, module, ok bool) {
	p := strings.Split(rel, "/")
	switch {
	case len(p) == 10 && p[2] == "v1" && p[3] == "providers" && p[7] == "download":
		prov, err1 := addrs.ParseProvider(p[1] + "/" + p[4] + "/" + p[5])
		v, err2 := addrs.ParseVersion(p[6])
		plat, err3 := addrs.ParsePlatform(p[8] + "_" + p[9])
		if err1 != nil || err2 != nil || err3 != nil {
			return "", false, false
		}
		return relativeURL(rel, layout.ArchivePath(prov, v, plat)), false, true
	case len(p) == 9 && p[2] == "v1" && p[3] == "modules" && p[8] == "download":
		m, err1 := addrs.ParseModule(p[1] + "/" + p[4] + "/" + p[5] + "/" + p[6])
		v, err2 := addrs.ParseVersion(p[7])
		if err1 != nil || err2 != nil {
			return "", false, false
		}
		return relativeURL(rel, layout.ModuleArchivePath(m, v)), true, true
	}
	return "", false, false
}

// readDoc decodes the JSON document at rel into v.
// maxNginxFragment bounds the nginx fragment verify reads: about 250 bytes
// per module version.
const maxNginxFragment = 64 << 20

func readDoc(ctx context.Context, tree *layout.Tree, rel string, v any) error {
	data, err := tree.Reader().ReadFile(ctx, rel, maxDownloadDoc)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

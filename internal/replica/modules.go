package replica

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/regproto"
	"github.com/tfmirror/tfmirror/layout"
)

// ModuleServicesPath is the modules.v1 base of host's replica, relative to
// the tree's root, with the trailing slash clients need.
func ModuleServicesPath(host addrs.Hostname) string {
	return Dir + "/" + string(host) + "/v1/modules/"
}

// ModuleVersionsPath is the relative path of a module's versions document.
func ModuleVersionsPath(m addrs.Module) string {
	return ModuleServicesPath(m.Host) + m.Namespace + "/" + m.Name + "/" + m.TargetSystem + "/versions"
}

// ModuleDownloadPath is the relative path of a module version's download
// document.
func ModuleDownloadPath(m addrs.Module, v addrs.Version) string {
	return ModuleServicesPath(m.Host) + m.Namespace + "/" + m.Name + "/" + m.TargetSystem + "/" + v.String() + "/download"
}

// NginxPath is the nginx configuration fragment a build writes with the
// module replica: one exact location per download document that sends its
// location as the X-Terraform-Get header, the only place Terraform reads
// it. examples/nginx/tfmirror.conf includes it inside its replica
// location; it assumes the tree is served at the site's root.
const NginxPath = Dir + "/x-terraform-get.nginx.conf"

func isModuleFile(rel string) bool {
	if rel == NginxPath {
		return true
	}
	parts := strings.Split(rel, "/")
	return len(parts) > 4 && parts[2] == "v1" && parts[3] == "modules"
}

// WriteModules writes the module registry replica of every module in
// tree, and leaves the provider replica as it is: a build with modules
// writes it whether or not the provider replica is asked for.
func WriteModules(ctx context.Context, tree *layout.Tree) (*Report, error) {
	return writeReplica(ctx, tree, nil, nil)
}

// ModuleLocation is the location a download document gives for a module
// version: its package relative to the document, then the module's
// subdirectory in it.
func ModuleLocation(m addrs.Module, v addrs.Version, subdir string) string {
	loc := relativeURL(ModuleDownloadPath(m, v), layout.ModuleArchivePath(m, v))
	if subdir != "" {
		loc += "//" + subdir
	}
	return loc
}

// modules writes every module's download documents, then its versions
// document, then the nginx fragment.
func (w *writer) modules() error {
	modules, err := w.tree.Modules(w.ctx)
	if err != nil {
		return fmt.Errorf("registry replica: list modules: %w", err)
	}
	var nginx strings.Builder
	nginx.WriteString(nginxHeader)
	for _, m := range modules {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if err := w.module(m, &nginx); err != nil {
			return fmt.Errorf("registry replica of module %s: %w", m.ForDisplay(), err)
		}
	}
	if len(modules) == 0 {
		return nil
	}
	return w.put(NginxPath, []byte(nginx.String()))
}

func (w *writer) module(m addrs.Module, nginx *strings.Builder) error {
	versions, err := w.tree.ModuleVersions(w.ctx, m)
	if err != nil {
		return err
	}
	list := regproto.ModuleVersionList{Versions: []regproto.ModuleVersion{}}
	for _, v := range slices.Backward(versions) {
		rec, err := w.tree.ReadModuleRecord(w.ctx, m, v)
		if err != nil {
			return err
		}
		loc, err := w.locate(m, v, rec)
		if err != nil {
			return fmt.Errorf("version %s: %w", v, err)
		}
		if err := w.putJSON(ModuleDownloadPath(m, v), regproto.ModuleDownload{Location: loc}); err != nil {
			return err
		}
		w.nginxLocation(nginx, m, v, loc)
		list.Versions = append(list.Versions, regproto.ModuleVersion{Version: v.String()})
	}
	if len(list.Versions) == 0 {
		return nil
	}
	w.offer(m.Host, regproto.ModulesV1, ModuleServicesPath(m.Host))
	w.report.Modules++
	return w.putJSON(ModuleVersionsPath(m), regproto.ModuleVersions{Modules: []regproto.ModuleVersionList{list}})
}

// nginxLocation adds a download document's location block to the nginx
// fragment. A location with characters nginx would read as syntax or
// variables is left out, with a warning: Terraform cannot install that
// version through nginx (OpenTofu reads the document's body).
func (w *writer) nginxLocation(nginx *strings.Builder, m addrs.Module, v addrs.Version, loc string) {
	block, ok := nginxBlock(m, v, loc)
	if !ok {
		w.warn("module %s %s: its location %q has characters an nginx configuration cannot hold; left out of %s", m.ForDisplay(), v, loc, NginxPath)
		return
	}
	nginx.WriteString(block)
}

// nginxHeader starts the nginx fragment.
const nginxHeader = "# Written by tfmirror with the module registry replica: do not edit.\n"

// nginxBlock is the fragment's location block for a module version whose
// download document gives loc; ok is false when nginx cannot hold it.
func nginxBlock(m addrs.Module, v addrs.Version, loc string) (block string, ok bool) {
	rel := ModuleDownloadPath(m, v)
	if strings.ContainsFunc(rel+loc, unsafeForNginx) {
		return "", false
	}
	return fmt.Sprintf("location = /%s {\n    default_type application/json;\n    add_header X-Terraform-Get \"%s\" always;\n    add_header Cache-Control \"no-cache\" always;\n}\n", rel, loc), true
}

// unsafeForNginx: what ends a quoted nginx string or starts a variable,
// control characters and anything but printable ASCII.
func unsafeForNginx(r rune) bool {
	return r < 0x21 || r > 0x7e || strings.ContainsRune(`"\$;{}'`+"`", r)
}

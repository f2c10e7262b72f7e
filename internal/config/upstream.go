package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/tfmirror/tfmirror/internal/endpoint"
	"github.com/tfmirror/tfmirror/internal/settings"
	"github.com/tfmirror/tfmirror/mirror"
)

// Upstream is one method of the manifest's provider_installation block,
// shaped like OpenTofu's: where the providers it includes come from. Its
// Location is the network mirror's URL (a directory, made absolute against
// the manifest's, when it has no scheme), the OCI repository template as
// oci://TEMPLATE, or the filesystem mirror's directory.
type Upstream = settings.Upstream

var installationSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "direct"}, {Type: "network_mirror"}, {Type: "oci_mirror"}, {Type: "filesystem_mirror"},
}}

// locationAttr is each method's attribute naming where it reads.
var locationAttr = map[string]string{
	"network_mirror": "url", "oci_mirror": "repository_template", "filesystem_mirror": "path",
}

// decodeInstallation reads a provider_installation block: its methods in
// order, first match wins, as in OpenTofu's CLI configuration.
func decodeInstallation(block *hcl.Block, dir string) ([]Upstream, hcl.Diagnostics) {
	content, diags := block.Body.Content(installationSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	var out []Upstream
	direct := false
	for _, b := range content.Blocks {
		u, ds := decodeMethod(b, dir)
		diags = append(diags, ds...)
		if b.Type == "direct" {
			if direct {
				diags = append(diags, errAt(b.DefRange, "Duplicate direct block", "A provider_installation block may have one direct block.")...)
			}
			direct = true
		}
		if !ds.HasErrors() {
			out = append(out, u)
		}
	}
	if len(out) == 0 && !diags.HasErrors() {
		diags = append(diags, errAt(block.DefRange, "No installation methods", "Add direct {}, network_mirror, oci_mirror or filesystem_mirror blocks.")...)
	}
	return out, diags
}

func decodeMethod(b *hcl.Block, dir string) (Upstream, hcl.Diagnostics) {
	u := Upstream{Kind: b.Type}
	attrs := []hcl.AttributeSchema{{Name: "include"}, {Name: "exclude"}}
	if name, ok := locationAttr[b.Type]; ok {
		attrs = append(attrs, hcl.AttributeSchema{Name: name, Required: true})
	}
	content, diags := b.Body.Content(&hcl.BodySchema{Attributes: attrs})
	if diags.HasErrors() {
		return u, diags
	}
	for name, dst := range map[string]*[]string{"include": &u.Include, "exclude": &u.Exclude} {
		attr, ok := content.Attributes[name]
		if !ok {
			continue
		}
		if ds := gohcl.DecodeExpression(attr.Expr, nil, dst); ds.HasErrors() {
			return u, ds
		}
		for _, p := range *dst {
			if err := mirror.CheckPattern(p); err != nil {
				return u, errAt(attr.Expr.Range(), "Invalid provider pattern", err.Error())
			}
		}
	}
	name, ok := locationAttr[b.Type]
	if !ok {
		return u, nil
	}
	attr := content.Attributes[name]
	var vars *hcl.EvalContext
	if b.Type == "oci_mirror" { // ${hostname}, ${namespace} and ${type} as OpenTofu writes them
		vars = templateVars
	}
	if ds := gohcl.DecodeExpression(attr.Expr, vars, &u.Location); ds.HasErrors() {
		return u, ds
	}
	if err := resolveUpstream(&u, dir); err != nil {
		return u, errAt(attr.Expr.Range(), "Invalid "+name, err.Error())
	}
	return u, nil
}

// resolve makes a location usable: a directory relative to the manifest's,
// an OCI template as oci://TEMPLATE.
func resolveUpstream(u *Upstream, dir string) error {
	switch {
	case u.Location == "":
		return fmt.Errorf("%s is empty", locationAttr[u.Kind])
	case u.Kind == "oci_mirror":
		if strings.Contains(u.Location, "://") {
			return fmt.Errorf("%q: write the repository template as in OpenTofu, without a scheme", u.Location)
		}
		u.Location = "oci://" + u.Location
	}
	loc, err := endpoint.Parse(u.Location)
	if err != nil {
		return err
	}
	switch u.Kind {
	case "filesystem_mirror":
		err = loc.Accept("a filesystem_mirror's path", endpoint.Dir)
	case "network_mirror":
		err = loc.Accept("a network_mirror's url", endpoint.HTTP, endpoint.Dir)
	}
	if err != nil {
		return err
	}
	if loc.Kind == endpoint.Dir && !filepath.IsAbs(u.Location) {
		u.Location = filepath.Join(dir, u.Location)
	}
	return nil
}

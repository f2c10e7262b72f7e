package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/mirror"
)

var moduleSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "versions"}, {Name: "newest"}, {Name: "min_age"}},
}

// decodeModule reads a module "[HOST/]NAMESPACE/NAME/SYSTEM" block: every
// version matching versions, or the newest N.
func decodeModule(block *hcl.Block, seen map[string]hcl.Range) (mirror.ModuleRequirement, hcl.Diagnostics) {
	var req mirror.ModuleRequirement
	if src := block.Labels[0]; strings.Contains(src, "::") || strings.Contains(src, "://") || strings.HasPrefix(src, ".") {
		return req, errAt(block.LabelRanges[0], "Invalid module",
			fmt.Sprintf("%q is a module source, not a registry address: a module block names a module of a registry, [HOST/]NAMESPACE/NAME/SYSTEM such as \"terraform-aws-modules/vpc/aws\"; what the registry's versions point at (git, archives) is fetched and packed from there.", src))
	}
	m, err := addrs.ParseModule(block.Labels[0])
	if err != nil {
		return req, errAt(block.LabelRanges[0], "Invalid module", err.Error())
	}
	key := "module " + m.String()
	if prev, dup := seen[key]; dup {
		return req, errAt(block.DefRange, "Duplicate module block",
			fmt.Sprintf("Module %s is already configured at %s:%d:%d.", m.ForDisplay(), prev.Filename, prev.Start.Line, prev.Start.Column))
	}
	seen[key] = block.DefRange
	content, diags := block.Body.Content(moduleSchema)
	if diags.HasErrors() {
		return req, diags
	}
	req = mirror.ModuleRequirement{Module: m, From: fmt.Sprintf("%s:%d", block.DefRange.Filename, block.DefRange.Start.Line), MinAge: -1}
	if age, ds := decodeAge(content); ds.HasErrors() {
		return req, ds
	} else if age != nil {
		req.MinAge = *age
	}
	if attr, ok := content.Attributes["newest"]; ok {
		if ds := gohcl.DecodeExpression(attr.Expr, nil, &req.Newest); ds.HasErrors() {
			return req, ds
		}
		if req.Newest < 1 {
			diags = append(diags, errAt(attr.Expr.Range(), "Invalid newest", "newest must be a whole number of at least 1.")...)
		}
	}
	attr, ok := content.Attributes["versions"]
	if !ok {
		if req.Newest == 0 {
			diags = append(diags, errAt(block.DefRange, "Missing versions",
				`Say which versions to mirror, such as versions = "~> 5.0", or newest = 1 for only the latest release.`)...)
		}
		return req, diags
	}
	var ds hcl.Diagnostics
	if req.Constraint, ds = versionsString(attr); ds.HasErrors() {
		return req, append(diags, ds...)
	}
	if err := mirror.CheckModuleConstraint(req.Constraint); err != nil {
		diags = append(diags, errAt(attr.Expr.Range(), "Invalid version constraint", err.Error())...)
	}
	return req, diags
}

package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/mirror"
)

var providerSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "versions"}, {Name: "newest"}, {Name: "platforms"}, {Name: "min_age"}},
}

func decodeProvider(block *hcl.Block, defaults []addrs.Platform, defaultsSet bool, seen map[string]hcl.Range) (mirror.Requirement, hcl.Diagnostics) {
	var req mirror.Requirement
	p, err := addrs.ParseProvider(block.Labels[0])
	if err == nil {
		err = mirror.CheckProvider(p)
	}
	if _, rest, ok := strings.Cut(block.Labels[0], "://"); ok && err != nil {
		return req, errAt(block.LabelRanges[0], "Invalid provider",
			fmt.Sprintf("a provider address has no scheme: %q, as in required_providers.", strings.Trim(rest, "/")))
	}
	if err != nil {
		return req, errAt(block.LabelRanges[0], "Invalid provider", err.Error())
	}
	if prev, dup := seen[p.String()]; dup {
		return req, errAt(block.DefRange, "Duplicate provider block",
			fmt.Sprintf("Provider %s is already configured at %s:%d:%d.", p, prev.Filename, prev.Start.Line, prev.Start.Column))
	}
	seen[p.String()] = block.DefRange
	content, diags := block.Body.Content(providerSchema)
	if diags.HasErrors() {
		return req, diags
	}
	req = mirror.Requirement{Provider: p, Platforms: defaults, MinAge: -1}
	diags = append(diags, decodeVersions(content, block, &req)...)
	if age, ds := decodeAge(content); ds.HasErrors() {
		diags = append(diags, ds...)
	} else if age != nil {
		req.MinAge = *age
	}
	if attr, ok := content.Attributes["platforms"]; ok {
		var ds hcl.Diagnostics
		req.Platforms, ds = decodePlatforms(attr)
		diags = append(diags, ds...)
	}
	// Platforms set at the top that could not be read are that list's
	// error, not this block's.
	if len(req.Platforms) == 0 && !defaultsSet && !diags.HasErrors() {
		diags = append(diags, errAt(block.DefRange, "No platforms",
			fmt.Sprintf("Provider %s has no platforms: set platforms at the top of the manifest or in this block.", p))...)
	}
	return req, diags
}

func decodeVersions(content *hcl.BodyContent, block *hcl.Block, req *mirror.Requirement) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if attr, ok := content.Attributes["newest"]; ok {
		if ds := gohcl.DecodeExpression(attr.Expr, nil, &req.Newest); ds.HasErrors() {
			return ds
		}
		if req.Newest < 1 {
			diags = append(diags, errAt(attr.Expr.Range(), "Invalid newest", "newest must be a whole number of at least 1.")...)
		}
	}
	_, hasNewest := content.Attributes["newest"]
	attr, ok := content.Attributes["versions"]
	if !ok {
		if !hasNewest {
			diags = append(diags, errAt(block.DefRange, "Missing versions",
				`Say which versions to mirror, such as versions = ">= 5.0.0", or newest = 1 for only the latest release.`)...)
		}
		req.Allowed, _ = addrs.ParseConstraints("")
		return diags
	}
	var ds hcl.Diagnostics
	if req.Constraints, ds = versionsString(attr); ds.HasErrors() {
		return append(diags, ds...)
	}
	set, err := addrs.ParseConstraints(req.Constraints)
	if err != nil {
		return append(diags, errAt(attr.Expr.Range(), "Invalid version constraint", err.Error())...)
	}
	if addrs.AllowsNone(req.Constraints) {
		return append(diags, errAt(attr.Expr.Range(), "Version constraint allows no version",
			fmt.Sprintf("No version of %s can satisfy %q: no release would ever be mirrored.", req.Provider, req.Constraints))...)
	}
	req.Allowed = set
	return diags
}

func decodePlatforms(attr *hcl.Attribute) ([]addrs.Platform, hcl.Diagnostics) {
	var raw []string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	out, i, err := addrs.ParseUserPlatforms(raw)
	if err != nil {
		return nil, errAt(elementRange(attr.Expr, i), "Invalid platform", err.Error())
	}
	if len(out) == 0 {
		return nil, errAt(attr.Expr.Range(), "No platforms", "The platforms list is empty.")
	}
	return out, nil
}

// elementRange is where the i-th element of a list is written, or the
// whole expression when it is not a literal list.
func elementRange(expr hcl.Expression, i int) hcl.Range {
	if tuple, ok := expr.(*hclsyntax.TupleConsExpr); ok && i < len(tuple.Exprs) {
		return tuple.Exprs[i].Range()
	}
	return expr.Range()
}

// versionsString reads a versions attribute: one string of constraints.
// A list of them, the usual slip, is refused with the string meant.
func versionsString(attr *hcl.Attribute) (string, hcl.Diagnostics) {
	var text string
	ds := gohcl.DecodeExpression(attr.Expr, nil, &text)
	if !ds.HasErrors() && text == "" {
		// Leaving versions out is refused; an empty string must not
		// quietly mean every release instead.
		return "", errAt(attr.Expr.Range(), "Empty versions",
			`Say which versions to mirror, such as versions = ">= 5.0.0"; for every release write versions = ">= 0.0.0".`)
	}
	if !ds.HasErrors() {
		return text, nil
	}
	var list []string
	if gohcl.DecodeExpression(attr.Expr, nil, &list).HasErrors() {
		return "", ds
	}
	return "", errAt(attr.Expr.Range(), "Invalid versions",
		fmt.Sprintf("versions is one string of constraints separated by commas, not a list: versions = %q.", strings.Join(list, ", ")))
}

func errAt(rng hcl.Range, summary, detail string) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
}

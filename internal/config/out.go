package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfmirror/tfmirror/internal/endpoint"
)

// templateVars let an OCI repository template be written in the manifest
// exactly as in OpenTofu's oci_mirror block: "${hostname}", "${namespace}"
// and "${type}" evaluate to themselves, so the string is the template.
var templateVars = &hcl.EvalContext{Variables: map[string]cty.Value{
	"hostname":  cty.StringVal("${hostname}"),
	"namespace": cty.StringVal("${namespace}"),
	"type":      cty.StringVal("${type}"),
}}

// decodeOut reads the out attribute, the destinations a build publishes
// into when no --out is given:
//
//	out = ["site", "s3://bucket/providers/", "oci://registry.example.com/tf/${hostname}/${namespace}/${type}"]
//
// A directory is relative to the manifest.
func decodeOut(attr *hcl.Attribute, dir string) ([]string, hcl.Diagnostics) {
	var raw []string
	if diags := gohcl.DecodeExpression(attr.Expr, templateVars, &raw); diags.HasErrors() {
		return nil, diags
	}
	var out []string
	for _, ref := range raw {
		if strings.TrimSpace(ref) == "" {
			return nil, errAt(attr.Expr.Range(), "Empty destination", "out names directories, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE or oci-layout://DIRECTORY.")
		}
		loc, err := endpoint.Parse(ref)
		if err == nil {
			err = loc.Accept("out", endpoint.Dir, endpoint.S3, endpoint.OCI, endpoint.OCILayout)
		}
		if err != nil {
			return nil, errAt(attr.Expr.Range(), "Invalid destination", err.Error())
		}
		if loc.Kind == endpoint.Dir && !filepath.IsAbs(ref) {
			ref = filepath.Join(dir, ref)
		}
		for _, o := range out {
			if o == ref {
				return nil, errAt(attr.Expr.Range(), "Duplicate destination", fmt.Sprintf("%s is named twice.", ref))
			}
		}
		out = append(out, ref)
	}
	if len(out) == 0 {
		return nil, errAt(attr.Expr.Range(), "No destination", "The out list is empty: remove it to publish into ./site, or name destinations.")
	}
	return out, nil
}

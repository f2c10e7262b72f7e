package tfconfig

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	tfaddr "github.com/opentofu/registry-address/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// providerTarget is the provider a local name stands for. The built-in
// "terraform" provider is part of the CLI and never a requirement.
type providerTarget struct {
	provider addrs.Provider
	builtin  bool
	// impliedHost says the address names no registry host: OpenTofu reads
	// it on registry.opentofu.org, Terraform on registry.terraform.io.
	impliedHost bool
}

// parseSource parses a required_providers source address. It returns a
// non-empty summary and a detail when the address is invalid.
func parseSource(s string) (t providerTarget, summary, detail string) {
	raw, err := tfaddr.ParseProviderSource(s)
	if err != nil {
		if p, perr := addrs.ParseProvider(s); perr == nil {
			return providerTarget{provider: p}, "", "" // a namespace only Terraform 1.16 takes
		}
		var pe *tfaddr.ParserError
		if errors.As(err, &pe) {
			return t, pe.Summary, pe.Detail
		}
		return t, "Invalid provider source address", err.Error()
	}
	if raw.IsBuiltIn() {
		return providerTarget{builtin: true}, "", ""
	}
	if !raw.HasKnownNamespace() {
		// One part names a type in the hashicorp namespace. Unlike a local
		// name, the source "terraform" means hashicorp/terraform.
		s = "hashicorp/" + raw.Type
	}
	p, err := addrs.ParseProvider(s)
	if err != nil {
		return t, "Invalid provider source address", err.Error()
	}
	return providerTarget{provider: p, impliedHost: strings.Count(s, "/") < 2}, "", ""
}

// impliedTarget is the provider a local name implies when required_providers
// does not declare it: the built-in provider for "terraform", else
// hashicorp/NAME on the default registry.
func impliedTarget(local string) (providerTarget, error) {
	part, err := tfaddr.ParseProviderPart(local)
	if err != nil {
		return providerTarget{}, fmt.Errorf("%q is not a valid provider name: %w", local, err)
	}
	if part == "terraform" {
		return providerTarget{builtin: true}, nil
	}
	p, err := addrs.ParseProvider("hashicorp/" + part)
	if err != nil {
		return providerTarget{}, err
	}
	return providerTarget{provider: p, impliedHost: true}, nil
}

// checkLocalName reports whether a provider local name is valid and already
// in its normalized form, as OpenTofu requires of names in provider blocks,
// provider references and required_providers objects.
func checkLocalName(name string, rng hcl.Range, diags *hcl.Diagnostics) bool {
	norm, err := tfaddr.ParseProviderPart(name)
	if err != nil {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid provider local name",
			Detail:   fmt.Sprintf("%s is an invalid provider local name: %s", name, err),
			Subject:  rng.Ptr(),
		})
		return false
	}
	if norm != name {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid provider local name",
			Detail:   fmt.Sprintf("Provider names must be normalized. Replace %q with %q to fix this error.", name, norm),
			Subject:  rng.Ptr(),
		})
		return false
	}
	return true
}

// checkGoVersionConstraint validates a constraint with hashicorp/go-version,
// the first of the two parsers OpenTofu applies.
func checkGoVersionConstraint(c *constraintDecl, diags *hcl.Diagnostics) bool {
	if err := addrs.CheckGoVersionConstraint(c.text); err != nil {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid version constraint",
			Detail:   fmt.Sprintf("%q does not use correct version constraint syntax.", c.text),
			Subject:  c.rng.Ptr(),
		})
		return false
	}
	return true
}

// checkConstraint validates a constraint with the parser that selects
// versions, the second one OpenTofu applies.
func checkConstraint(c *constraintDecl, diags *hcl.Diagnostics) bool {
	if _, err := addrs.ParseConstraints(c.text); err != nil {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid version constraint",
			Detail:   fmt.Sprintf("Incorrect version constraint syntax: %s.", err),
			Subject:  c.rng.Ptr(),
		})
		return false
	}
	return true
}

// providerRef decodes a provider meta-argument (NAME, NAME.ALIAS or
// NAME.ALIAS[KEY]) and returns its local name, or "" after reporting a
// problem. A quoted reference is accepted, as OpenTofu still does.
func providerRef(expr hcl.Expression, diags *hcl.Diagnostics) string {
	name, _ := providerConfigRef(expr, diags)
	return name
}

// providerConfigRef is providerRef with the alias too ("" for none): how
// OpenTofu reads a provider configuration reference, in a provider
// argument and in both sides of a module call's providers argument.
func providerConfigRef(expr hcl.Expression, diags *hcl.Diagnostics) (name, alias string) {
	if hcljson.IsJSONExpression(expr) {
		// JSON gives the reference as a string in native syntax.
		native, ok := jsonAsNative(expr)
		if !ok {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid provider configuration reference",
				Detail:   "The provider argument requires a string holding a provider type name, optionally followed by a period and then a configuration alias and optional instance key.",
				Subject:  expr.Range().Ptr(),
			})
			return "", ""
		}
		expr = native
	}
	maxLen := 3 // name, alias and a constant instance key
	if ix, ok := expr.(*hclsyntax.IndexExpr); ok {
		maxLen = 2
		expr = ix.Collection
	}
	trav, d := hcl.AbsTraversalForExpr(expr)
	if d.HasErrors() {
		if s, ok := quotedString(expr); ok {
			start := expr.Range().Start
			start.Column++
			start.Byte++
			trav, d = hclsyntax.ParseTraversalAbs([]byte(s), expr.Range().Filename, start)
		}
	}
	if d.HasErrors() || len(trav) == 0 || len(trav) > maxLen {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid provider configuration reference",
			Detail:   "The provider argument requires a provider type name, optionally followed by a period and then a configuration alias and optional instance key.",
			Subject:  expr.Range().Ptr(),
		})
		return "", ""
	}
	name = trav.RootName()
	if !checkLocalName(name, trav[0].SourceRange(), diags) {
		return "", ""
	}
	if len(trav) > 1 {
		if attr, ok := trav[1].(hcl.TraverseAttr); ok {
			alias = attr.Name
		}
	}
	return name, alias
}

// jsonAsNative parses the string value of a JSON expression as a native
// syntax expression, as OpenTofu does for references written in JSON.
func jsonAsNative(expr hcl.Expression) (hcl.Expression, bool) {
	v, d := expr.Value(nil)
	if d.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() || !v.IsKnown() {
		return nil, false
	}
	if hclsafe.CheckDepth([]byte(v.AsString()), expr.Range().Filename, hclsafe.Expression) != nil {
		return nil, false // nested too deep to parse safely
	}
	start := expr.Range().Start
	start.Column++ // the opening quote
	start.Byte++
	native, d := hclsyntax.ParseExpression([]byte(v.AsString()), expr.Range().Filename, start)
	if d.HasErrors() {
		return nil, false
	}
	return native, true
}

// quotedString returns the value of a native-syntax string literal.
func quotedString(expr hcl.Expression) (string, bool) {
	switch expr.(type) {
	case *hclsyntax.TemplateExpr, *hclsyntax.LiteralValueExpr:
	default:
		return "", false
	}
	v, d := expr.Value(nil)
	if d.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() || !v.IsKnown() {
		return "", false
	}
	return v.AsString(), true
}

// importTargetType returns the resource type named by an import block's
// "to" address (module.NAME[KEY]...TYPE.NAME[KEY]), or "" when the address
// is not a static reference.
func importTargetType(expr hcl.Expression) string {
	if hcljson.IsJSONExpression(expr) {
		native, ok := jsonAsNative(expr)
		if !ok {
			return ""
		}
		expr = native
	}
	names, ok := referenceNames(expr)
	if !ok {
		return ""
	}
	i := 0
	for i+1 < len(names) && names[i] == "module" {
		i += 2
	}
	if i < len(names) && names[i] == "data" {
		// Data sources cannot be imported; OpenTofu reports that.
		return ""
	}
	if i+1 >= len(names) {
		return ""
	}
	return names[i]
}

// referenceNames lists the attribute names along a reference expression,
// skipping index steps.
func referenceNames(expr hcl.Expression) ([]string, bool) {
	var names []string
	addTraversal := func(t hcl.Traversal) {
		for _, step := range t {
			switch s := step.(type) {
			case hcl.TraverseRoot:
				names = append(names, s.Name)
			case hcl.TraverseAttr:
				names = append(names, s.Name)
			}
		}
	}
	switch e := expr.(type) {
	case *hclsyntax.ScopeTraversalExpr:
		addTraversal(e.Traversal)
	case *hclsyntax.RelativeTraversalExpr:
		src, ok := referenceNames(e.Source)
		if !ok {
			return nil, false
		}
		names = append(names, src...)
		addTraversal(e.Traversal)
	case *hclsyntax.IndexExpr:
		return referenceNames(e.Collection)
	default:
		return nil, false
	}
	return names, true
}

// localPrefixes mark a module source as a path inside the caller's package.
var localPrefixes = []string{"./", "../", `.\`, `..\`}

func isLocalSource(s string) bool {
	for _, p := range localPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

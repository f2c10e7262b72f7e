package tfconfig

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// fileDecl is what one configuration file declares that matters for
// provider requirements.
type fileDecl struct {
	reqBlocks []*reqBlock
	providers []*providerDecl
	resources []*resourceDecl
	imports   []*importDecl
	calls     []*callDecl
	vars      []*varDecl
	locals    []*hcl.Attribute
}

// reqBlock is one required_providers block.
type reqBlock struct {
	rng     hcl.Range
	entries []*reqEntry
}

// reqEntry is one entry of a required_providers block, already resolved to
// a provider.
type reqEntry struct {
	name    string
	target  providerTarget
	version *constraintDecl // nil when no version is given
}

// constraintDecl is a version constraint string and where it was written.
type constraintDecl struct {
	text string
	rng  hcl.Range // the string's own range
}

// providerDecl is a provider configuration block.
type providerDecl struct {
	name    string
	alias   string
	version *constraintDecl
	rng     hcl.Range
}

func (p *providerDecl) key() string {
	if p.alias == "" {
		return p.name
	}
	return p.name + "." + p.alias
}

// resourceDecl is a resource, data or ephemeral block, or the data block of
// a check block.
type resourceDecl struct {
	mode string // "resource", "data" or "ephemeral"
	typ  string
	name string
	// ref is the local provider name of the provider meta-argument, or ""
	// when the block has none.
	ref string
	rng hcl.Range
}

func (r *resourceDecl) key() string { return r.mode + "." + r.typ + "." + r.name }

// importDecl is an import block: either the local name of its provider
// argument, or the resource type its "to" address names.
type importDecl struct {
	ref     string
	resType string
	rng     hcl.Range
}

// callDecl is a module block.
type callDecl struct {
	name string
	// source is the literal source string; static is false when the
	// source is an expression that needs evaluation, or missing.
	source    string
	static    bool
	sourceSet bool
	// version is the version constraint, nil when there is none or it is
	// invalid (reported) or not a literal (versionDynamic).
	version        *constraintDecl
	versionDynamic bool
	versionSet     bool
	rng            hcl.Range // the block header
	// sourceAttr and versionAttr are the arguments as written, for
	// static evaluation; args are the call's other arguments, the
	// values of the called module's variables.
	sourceAttr  *hcl.Attribute
	versionAttr *hcl.Attribute
	args        hcl.Attributes
}

var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "terraform"},
		// Only valid inside a terraform block; kept to report the mistake.
		{Type: "required_providers"},
		{Type: "provider", LabelNames: []string{"name"}},
		{Type: "module", LabelNames: []string{"name"}},
		{Type: "resource", LabelNames: []string{"type", "name"}},
		{Type: "data", LabelNames: []string{"type", "name"}},
		{Type: "ephemeral", LabelNames: []string{"type", "name"}},
		{Type: "import"},
		{Type: "check", LabelNames: []string{"name"}},
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
	},
}

var terraformSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}},
}

var providerSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "alias"}, {Name: "version"}},
}

var resourceSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "provider"}},
}

var importSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "provider"}, {Name: "to"}},
}

var checkSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{{Type: "data", LabelNames: []string{"type", "name"}}},
}

var moduleSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "source", Required: true}, {Name: "version"}},
}

var moduleOverrideSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "version"}},
}

// decodeFile extracts the declarations of one file. Problems are appended
// to diags.
func decodeFile(body hcl.Body, override bool, diags *hcl.Diagnostics) *fileDecl {
	f := &fileDecl{}
	content, _, d := body.PartialContent(fileSchema)
	*diags = append(*diags, d...)
	if content == nil {
		return f
	}
	for _, block := range content.Blocks {
		switch block.Type {
		case "terraform":
			tc, _, d := block.Body.PartialContent(terraformSchema)
			*diags = append(*diags, d...)
			if tc == nil {
				continue
			}
			for _, inner := range tc.Blocks {
				f.reqBlocks = append(f.reqBlocks, decodeRequiredProviders(inner, diags))
			}
		case "required_providers":
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid required_providers block",
				Detail:   `A "required_providers" block belongs inside a "terraform" block.`,
				Subject:  block.TypeRange.Ptr(),
			})
		case "provider":
			if p := decodeProvider(block, diags); p != nil {
				f.providers = append(f.providers, p)
			}
		case "module":
			f.calls = append(f.calls, decodeModuleCall(block, override, diags))
		case "resource", "data", "ephemeral":
			f.resources = append(f.resources, decodeResource(block, diags))
		case "import":
			f.imports = append(f.imports, decodeImport(block, diags))
		case "variable":
			f.vars = append(f.vars, decodeVariable(block, diags))
		case "locals":
			attrs, d := block.Body.JustAttributes()
			*diags = append(*diags, d...)
			f.locals = append(f.locals, sortedAttrs(attrs)...)
		case "check":
			cc, _, d := block.Body.PartialContent(checkSchema)
			*diags = append(*diags, d...)
			if cc == nil || override {
				// OpenTofu does not merge check blocks from override
				// files into the module.
				continue
			}
			for _, inner := range cc.Blocks {
				f.resources = append(f.resources, decodeResource(inner, diags))
			}
		}
	}
	return f
}

// decodeRequiredProviders decodes a required_providers block. Entries with
// problems are reported and left out.
func decodeRequiredProviders(block *hcl.Block, diags *hcl.Diagnostics) *reqBlock {
	rb := &reqBlock{rng: block.DefRange}
	attrs, d := block.Body.JustAttributes()
	*diags = append(*diags, d...)
	if d.HasErrors() {
		return rb
	}
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	// Source order, so that problems are reported in reading order.
	sort.Slice(names, func(i, j int) bool {
		return attrs[names[i]].Range.Start.Byte < attrs[names[j]].Range.Start.Byte
	})
	for _, name := range names {
		if e := decodeRequirement(attrs[name], diags); e != nil {
			rb.entries = append(rb.entries, e)
		}
	}
	return rb
}

func decodeRequirement(attr *hcl.Attribute, diags *hcl.Diagnostics) *reqEntry {
	name := attr.Name
	exprRng := attr.Expr.Range()

	// The legacy form: a version constraint string alone.
	if val, d := attr.Expr.Value(nil); !d.HasErrors() && val.Type().IsPrimitiveType() {
		version, ok := versionFromValue(val, attr, diags)
		target, named := impliedTargetAt(name, exprRng, diags)
		if !named || !ok {
			return nil
		}
		return &reqEntry{name: name, target: target, version: version}
	}

	if !checkLocalName(name, exprRng, diags) {
		return nil
	}
	pairs, d := hcl.ExprMap(attr.Expr)
	if d.HasErrors() {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid required_providers object",
			Detail:   "required_providers entries must be strings or objects.",
			Subject:  exprRng.Ptr(),
		})
		return nil
	}

	e := &reqEntry{name: name}
	var haveSource, failed bool
	for _, kv := range pairs {
		key, d := kv.Key.Value(nil)
		if d.HasErrors() {
			*diags = append(*diags, d...)
			failed = true
			continue
		}
		if !key.Type().Equals(cty.String) || key.IsNull() {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid Attribute",
				Detail:   "Keys of a provider requirement must be strings.",
				Subject:  kv.Key.Range().Ptr(),
			})
			failed = true
			continue
		}
		valRng := kv.Value.Range()
		switch key.AsString() {
		case "version":
			str, ok := literalString(kv.Value, "Invalid version constraint", "Version must be specified as a string.", diags)
			if !ok {
				failed = true
				continue
			}
			c := &constraintDecl{text: str, rng: valRng}
			if !checkGoVersionConstraint(c, diags) {
				failed = true
				continue
			}
			e.version = c
		case "source":
			str, ok := literalString(kv.Value, "Invalid source", "Source must be specified as a string.", diags)
			if !ok {
				failed = true
				continue
			}
			target, summary, detail := parseSource(str)
			if summary != "" {
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  summary,
					Detail:   detail,
					Subject:  valRng.Ptr(),
				})
				failed = true
				continue
			}
			e.target = target
			haveSource = true
		case "configuration_aliases":
			if !checkConfigurationAliases(name, kv.Value, diags) {
				failed = true
			}
		default:
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid required_providers object",
				Detail:   `required_providers objects can only contain "version", "source" and "configuration_aliases" attributes. To configure a provider, use a "provider" block.`,
				Subject:  kv.Key.Range().Ptr(),
			})
			return nil
		}
	}
	if failed {
		return nil
	}
	if !haveSource {
		target, ok := impliedTargetAt(name, exprRng, diags)
		if !ok {
			return nil
		}
		e.target = target
	}
	return e
}

// impliedTargetAt is impliedTarget, reporting a name that implies no
// provider as an error at rng.
func impliedTargetAt(name string, rng hcl.Range, diags *hcl.Diagnostics) (providerTarget, bool) {
	target, err := impliedTarget(name)
	if err != nil {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid provider name",
			Detail:   err.Error(),
			Subject:  rng.Ptr(),
		})
		return providerTarget{}, false
	}
	return target, true
}

// checkConfigurationAliases checks that every element of the list is a
// reference NAME.ALIAS to the entry's own local name.
func checkConfigurationAliases(name string, expr hcl.Expression, diags *hcl.Diagnostics) bool {
	exprs, d := hcl.ExprList(expr)
	if d.HasErrors() {
		*diags = append(*diags, d...)
		return false
	}
	ok := true
	for _, item := range exprs {
		trav, d := hcl.AbsTraversalForExpr(item)
		if d.HasErrors() {
			*diags = append(*diags, d...)
			ok = false
			continue
		}
		isAlias := len(trav) == 2
		if isAlias {
			_, isAlias = trav[1].(hcl.TraverseAttr)
		}
		if !isAlias {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid configuration_aliases value",
				Detail:   "Configuration aliases can only contain references to local provider configuration names in the format of provider.alias",
				Subject:  item.Range().Ptr(),
			})
			ok = false
			continue
		}
		if root := trav.RootName(); root != name {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid configuration_aliases value",
				Detail:   fmt.Sprintf("Configuration aliases must be prefixed with the provider name. Expected %q, but found %q.", name, root),
				Subject:  item.Range().Ptr(),
			})
			ok = false
		}
	}
	return ok
}

// versionFromValue turns the value of a version argument into a constraint:
// nil for null, an error for anything that is not a string (or a number or
// bool, which convert to one, as in OpenTofu). ok is false after an error.
func versionFromValue(val cty.Value, attr *hcl.Attribute, diags *hcl.Diagnostics) (*constraintDecl, bool) {
	rng := attr.Expr.Range()
	s, err := convert.Convert(val, cty.String)
	if err != nil {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid version constraint",
			Detail:   fmt.Sprintf("A string value is required for %s.", attr.Name),
			Subject:  rng.Ptr(),
		})
		return nil, false
	}
	if s.IsNull() || !s.IsKnown() {
		return nil, true
	}
	c := &constraintDecl{text: s.AsString(), rng: rng}
	if !checkGoVersionConstraint(c, diags) {
		return nil, false
	}
	return c, true
}

func decodeProvider(block *hcl.Block, diags *hcl.Diagnostics) *providerDecl {
	content, _, d := block.Body.PartialContent(providerSchema)
	*diags = append(*diags, d...)
	name := block.Labels[0]
	if !checkLocalName(name, block.DefRange, diags) {
		return nil
	}
	p := &providerDecl{name: name, rng: block.DefRange}
	if content == nil {
		return p
	}
	if attr, ok := content.Attributes["alias"]; ok {
		*diags = append(*diags, gohcl.DecodeExpression(attr.Expr, nil, &p.alias)...)
	}
	if attr, ok := content.Attributes["version"]; ok {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Version constraints inside provider configuration blocks are deprecated",
			Detail:   "OpenTofu still honours them; move the constraint to required_providers.",
			Subject:  attr.Expr.Range().Ptr(),
		})
		val, d := attr.Expr.Value(nil)
		*diags = append(*diags, d...)
		if !d.HasErrors() {
			p.version, _ = versionFromValue(val, attr, diags)
		}
	}
	return p
}

func decodeResource(block *hcl.Block, diags *hcl.Diagnostics) *resourceDecl {
	r := &resourceDecl{mode: block.Type, typ: block.Labels[0], name: block.Labels[1], rng: block.DefRange}
	content, _, d := block.Body.PartialContent(resourceSchema)
	*diags = append(*diags, d...)
	if content == nil {
		return r
	}
	if attr, ok := content.Attributes["provider"]; ok {
		r.ref = providerRef(attr.Expr, diags)
	}
	return r
}

func decodeImport(block *hcl.Block, diags *hcl.Diagnostics) *importDecl {
	imp := &importDecl{rng: block.DefRange}
	content, _, d := block.Body.PartialContent(importSchema)
	*diags = append(*diags, d...)
	if content == nil {
		return imp
	}
	if attr, ok := content.Attributes["provider"]; ok {
		imp.ref = providerRef(attr.Expr, diags)
	}
	if attr, ok := content.Attributes["to"]; ok {
		imp.resType = importTargetType(attr.Expr)
	}
	return imp
}

func decodeModuleCall(block *hcl.Block, override bool, diags *hcl.Diagnostics) *callDecl {
	c := &callDecl{name: block.Labels[0], rng: block.DefRange}
	schema := moduleSchema
	if override {
		schema = moduleOverrideSchema
	}
	content, rest, d := block.Body.PartialContent(schema)
	*diags = append(*diags, d...)
	if content == nil {
		return c
	}
	c.args, _ = rest.JustAttributes() // blocks in a call are no variables
	if attr, ok := content.Attributes["source"]; ok {
		c.sourceSet, c.sourceAttr = true, attr
		// OpenTofu evaluates the source with variables and locals known
		// at init; only a literal can be followed here.
		if v, d := attr.Expr.Value(nil); !d.HasErrors() && isLiteral(attr.Expr) && v.Type().Equals(cty.String) && !v.IsNull() && v.IsKnown() {
			c.source = v.AsString()
			c.static = true
		}
	}
	if attr, ok := content.Attributes["version"]; ok {
		c.versionSet, c.versionAttr = true, attr
		c.version, c.versionDynamic = decodeCallVersion(attr, diags)
	}
	return c
}

// decodeCallVersion decodes the version argument of a module block as
// OpenTofu does (hashicorp/go-version syntax; a number converts to a
// string, null is no constraint). dynamic is true when the argument is not
// a literal: OpenTofu may evaluate it, tfmirror cannot.
func decodeCallVersion(attr *hcl.Attribute, diags *hcl.Diagnostics) (c *constraintDecl, dynamic bool) {
	val, d := attr.Expr.Value(nil)
	if d.HasErrors() || !isLiteral(attr.Expr) {
		return nil, true
	}
	c, _ = versionFromValue(val, attr, diags)
	return c, false
}

// isLiteral reports whether expr refers to nothing. A JSON string holding
// a template such as "${var.v}" has a value without an evaluation
// context (the string as written), but refers to a variable.
func isLiteral(expr hcl.Expression) bool {
	return len(expr.Variables()) == 0
}

// literalString evaluates expr as a literal string. Anything else is
// reported with summary and detail at the expression.
func literalString(expr hcl.Expression, summary, detail string, diags *hcl.Diagnostics) (string, bool) {
	v, d := expr.Value(nil)
	if d.HasErrors() || !v.Type().Equals(cty.String) || v.IsNull() || !v.IsKnown() {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  summary,
			Detail:   detail,
			Subject:  expr.Range().Ptr(),
		})
		return "", false
	}
	return v.AsString(), true
}

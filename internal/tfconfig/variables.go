package tfconfig

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"
)

// varDecl is a variable block: what static evaluation needs of it.
type varDecl struct {
	name string
	rng  hcl.Range
	// typ is the type constraint (cty.DynamicPseudoType when none);
	// defaults are its optional attributes' defaults. typeSet says the
	// block gave one (for overrides).
	typ      cty.Type
	defaults *typeexpr.Defaults
	typeSet  bool
	// def is the default value, cty.NilVal when the variable is required.
	def    cty.Value
	defSet bool
	// nullable defaults to true, as in OpenTofu.
	nullable, nullableSet bool
	// constFalse is "const = false": not usable in a static context.
	constFalse, constSet bool
	sensitive, ephemeral bool
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "default"}, {Name: "nullable"}, {Name: "const"},
		{Name: "sensitive"}, {Name: "ephemeral"},
	},
}

// decodeVariable decodes what static evaluation needs of a variable
// block. Its other arguments are left to OpenTofu.
func decodeVariable(block *hcl.Block, diags *hcl.Diagnostics) *varDecl {
	v := &varDecl{name: block.Labels[0], rng: block.DefRange, typ: cty.DynamicPseudoType, nullable: true}
	content, _, d := block.Body.PartialContent(variableSchema)
	*diags = append(*diags, d...)
	if content == nil {
		return v
	}
	if attr, ok := content.Attributes["type"]; ok {
		ty, defaults, d := typeexpr.TypeConstraintWithDefaults(attr.Expr)
		*diags = append(*diags, d...)
		if !d.HasErrors() {
			v.typ, v.defaults, v.typeSet = ty, defaults, true
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		val, d := attr.Expr.Value(nil)
		*diags = append(*diags, d...)
		v.def, v.defSet = val, true
	}
	boolAttr := func(name string, to *bool) bool {
		attr, ok := content.Attributes[name]
		if ok {
			*diags = append(*diags, gohcl.DecodeExpression(attr.Expr, nil, to)...)
		}
		return ok
	}
	v.nullableSet = boolAttr("nullable", &v.nullable)
	var isConst bool
	v.constSet = boolAttr("const", &isConst)
	v.constFalse = v.constSet && !isConst
	boolAttr("sensitive", &v.sensitive)
	boolAttr("ephemeral", &v.ephemeral)
	return v
}

// required reports whether the variable has no default.
func (v *varDecl) required() bool { return v.def == cty.NilVal }

// literalParsing reports whether a value given as a string (--var,
// TF_VAR_) is taken as the string itself, as OpenTofu does for a variable
// without a type or of a primitive type; other values are parsed as HCL.
func (v *varDecl) literalParsing() bool {
	return v.typ == cty.DynamicPseudoType || v.typ.IsPrimitiveType()
}

// sortedAttrs lists attributes in source order.
func sortedAttrs(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Range.Start.Byte < out[j].Range.Start.Byte })
	return out
}

// addValues adds the variables and locals of a primary file, reporting
// duplicates as OpenTofu does.
func (mg *merger) addValues(f *fileDecl) {
	for _, v := range f.vars {
		if existing, ok := mg.vars[v.name]; ok {
			mg.errorAt(v.rng, "Duplicate variable declaration",
				fmt.Sprintf("A variable named %q was already declared at %s. Variable names must be unique within a module.", v.name, existing.rng))
			continue
		}
		mg.vars[v.name] = v
	}
	for _, a := range f.locals {
		if existing, ok := mg.locals[a.Name]; ok {
			mg.errorAt(a.NameRange, "Duplicate local value definition",
				fmt.Sprintf("A local value named %q was already defined at %s. Local value names must be unique within a module.", a.Name, existing.Range))
			continue
		}
		mg.locals[a.Name] = a
	}
}

// overrideValues applies the variables and locals of an override file:
// the arguments it sets replace the primary ones.
func (mg *merger) overrideValues(f *fileDecl) {
	for _, v := range f.vars {
		existing, ok := mg.vars[v.name]
		if !ok {
			mg.errorAt(v.rng, "Missing base variable declaration to override",
				fmt.Sprintf("There is no variable named %q. An override file can only override a variable that was already declared in a primary configuration file.", v.name))
			continue
		}
		if v.typeSet {
			existing.typ, existing.defaults, existing.typeSet = v.typ, v.defaults, true
		}
		if v.defSet {
			existing.def, existing.defSet = v.def, true
		}
		if v.nullableSet {
			existing.nullable, existing.nullableSet = v.nullable, true
		}
		if v.constSet {
			existing.constFalse, existing.constSet = v.constFalse, true
		}
		existing.sensitive = existing.sensitive || v.sensitive
		existing.ephemeral = existing.ephemeral || v.ephemeral
	}
	for _, a := range f.locals {
		if _, ok := mg.locals[a.Name]; !ok {
			mg.errorAt(a.NameRange, "Missing base local value definition to override",
				fmt.Sprintf("There is no local value named %q. An override file can only override a local value that was already defined in a primary configuration file.", a.Name))
			continue
		}
		mg.locals[a.Name] = a
	}
}

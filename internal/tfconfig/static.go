package tfconfig

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// staticScope evaluates expressions of one module instance as OpenTofu's
// static evaluator does (configs.StaticEvaluator): they may refer to the
// module's input variables, its locals, path.* and terraform.workspace,
// and call functions; anything else (resources, data sources, module
// outputs, count.index, each) is an error. A root module variable takes
// its value from Vars or its default; a called module's from the call's
// argument, evaluated in the caller, or its default.
type staticScope struct {
	l      *loader
	f      *frame
	m      *module
	vals   map[string]cty.Value
	locals map[string]cty.Value
	busy   map[string]bool // locals being evaluated, for cycles
	failed map[string]hcl.Diagnostics
}

// scopeOf returns the scope of a module instance, made on first use.
func (l *loader) scopeOf(f *frame) *staticScope {
	if f.scope == nil {
		f.scope = &staticScope{l: l, f: f, m: f.mod, vals: map[string]cty.Value{}, locals: map[string]cty.Value{},
			busy: map[string]bool{}, failed: map[string]hcl.Diagnostics{}}
	}
	return f.scope
}

// eval evaluates expr; need says what needs it, for messages.
func (s *staticScope) eval(expr hcl.Expression, need string, depth int) (cty.Value, hcl.Diagnostics) {
	if depth > maxEvalDepth {
		return cty.DynamicVal, s.fail(expr.Range(), "Expression too deeply nested",
			fmt.Sprintf("Evaluating %s goes through more than %d locals and module arguments, the most tfmirror follows.", need, maxEvalDepth))
	}
	if d := unboundedExpr(expr, need); d != nil {
		return cty.DynamicVal, hcl.Diagnostics{d}
	}
	refs := expr.Variables()
	if len(refs) > maxReferences {
		return cty.DynamicVal, s.fail(expr.Range(), "Expression too large",
			fmt.Sprintf("The expression has more than %d references, the most tfmirror evaluates for %s.", maxReferences, need))
	}
	var diags hcl.Diagnostics
	vars, locals := map[string]cty.Value{}, map[string]cty.Value{}
	for _, tr := range refs {
		diags = append(diags, s.reference(tr, need, depth, vars, locals)...)
	}
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var": cty.ObjectVal(vars), "local": cty.ObjectVal(locals),
			"path": cty.ObjectVal(map[string]cty.Value{
				"module": cty.StringVal(s.modulePath()), "root": cty.StringVal("."), "cwd": cty.StringVal(filepath.ToSlash(s.l.rootAbs)),
			}),
			"terraform": cty.ObjectVal(map[string]cty.Value{"workspace": cty.StringVal(s.l.workspace())}),
		},
		Functions: staticFunctions(&s.l.evalBytes),
	}
	val, d := expr.Value(ctx)
	if diags = append(diags, d...); diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	if valueSize(val) > maxValueSize {
		return cty.DynamicVal, s.fail(expr.Range(), "Value too large",
			fmt.Sprintf("The value for %s holds more than %d bytes, the most tfmirror evaluates.", need, maxValueSize))
	}
	return val, diags
}

func (s *staticScope) fail(rng hcl.Range, summary, detail string) hcl.Diagnostics {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}}
}

// reference puts the value a traversal refers to into vars or locals.
func (s *staticScope) reference(tr hcl.Traversal, need string, depth int, vars, locals map[string]cty.Value) hcl.Diagnostics {
	root := tr.RootName()
	switch root {
	case "path", "terraform":
		return nil
	case "var", "local":
	default:
		return s.fail(tr.SourceRange(), "Dynamic value in static context", fmt.Sprintf(
			"Unable to use %s in static context, which is required by %s: only input variables, locals, path.* and terraform.workspace can be used there.", traversalName(tr), need))
	}
	name, ok := attrName(tr)
	if !ok {
		return s.fail(tr.SourceRange(), "Invalid reference", fmt.Sprintf("A reference to a %s value must be followed by its name.", root))
	}
	var val cty.Value
	var diags hcl.Diagnostics
	if root == "var" {
		val, diags = s.variable(name, tr.SourceRange(), need, depth)
		vars[name] = val
	} else {
		val, diags = s.local(name, tr.SourceRange(), need, depth)
		locals[name] = val
	}
	return diags
}

func traversalName(tr hcl.Traversal) string {
	parts := []string{tr.RootName()}
	if name, ok := attrName(tr); ok {
		parts = append(parts, name)
	}
	return strings.Join(parts, ".")
}

// attrName is the name after var. or local.
func attrName(tr hcl.Traversal) (string, bool) {
	if len(tr) < 2 {
		return "", false
	}
	switch t := tr[1].(type) {
	case hcl.TraverseAttr:
		return t.Name, true
	case hcl.TraverseIndex:
		if t.Key.Type() == cty.String && t.Key.IsKnown() && !t.Key.IsNull() {
			return t.Key.AsString(), true
		}
	}
	return "", false
}

// local evaluates a local value once per module instance.
func (s *staticScope) local(name string, rng hcl.Range, need string, depth int) (cty.Value, hcl.Diagnostics) {
	if v, ok := s.locals[name]; ok {
		return v, nil
	}
	if d, ok := s.failed["local."+name]; ok {
		return cty.DynamicVal, d
	}
	attr, ok := s.m.locals[name]
	if !ok {
		return cty.DynamicVal, s.fail(rng, "Undefined local", fmt.Sprintf("Undefined local local.%s, needed by %s.", name, need))
	}
	if s.busy[name] {
		return cty.DynamicVal, s.fail(attr.Range, "Circular reference", fmt.Sprintf("local.%s is self referential.", name))
	}
	s.busy[name] = true
	v, diags := s.eval(attr.Expr, need, depth+1)
	delete(s.busy, name)
	if diags.HasErrors() {
		s.failed["local."+name] = diags
		return cty.DynamicVal, diags
	}
	s.locals[name] = v
	return v, diags
}

// variable evaluates an input variable once per module instance, with
// OpenTofu's conversions: to its type (with optional attributes'
// defaults), null to the default unless nullable, and a sensitive or
// ephemeral variable marked so that a source or version refuses it.
func (s *staticScope) variable(name string, rng hcl.Range, need string, depth int) (cty.Value, hcl.Diagnostics) {
	if v, ok := s.vals[name]; ok {
		return v, nil
	}
	if d, ok := s.failed["var."+name]; ok {
		return cty.DynamicVal, d
	}
	v, diags := s.variableValue(name, rng, need, depth)
	if diags.HasErrors() {
		s.failed["var."+name] = diags
		return cty.DynamicVal, diags
	}
	s.vals[name] = v
	return v, diags
}

func (s *staticScope) variableValue(name string, rng hcl.Range, need string, depth int) (cty.Value, hcl.Diagnostics) {
	decl, ok := s.m.vars[name]
	switch {
	case !ok:
		return cty.DynamicVal, s.fail(rng, "Undefined variable", fmt.Sprintf("Undefined variable var.%s, needed by %s.", name, need))
	case decl.constFalse:
		return cty.DynamicVal, s.fail(rng, "Unable to use variable in static context", fmt.Sprintf(
			"The variable %q cannot be used in a static context, because it is declared as \"const = false\"; %s needs it.", name, need))
	}
	val, given, diags := s.given(decl, need, depth)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	if !given {
		val = decl.def
	}
	if decl.defaults != nil && !val.IsNull() {
		val = decl.defaults.Apply(val)
	}
	val, err := convert.Convert(val, decl.typ)
	if err != nil {
		return cty.DynamicVal, s.fail(decl.rng, "Invalid value for input variable", fmt.Sprintf(
			"The given value is not suitable for var.%s declared at %s: %s.", name, decl.rng, err))
	}
	if val.IsNull() && !decl.nullable {
		if decl.required() {
			return cty.DynamicVal, s.fail(decl.rng, "Required variable not set", fmt.Sprintf(
				"The given value is not suitable for var.%s defined at %s: required variable may not be set to null.", name, decl.rng))
		}
		if val, err = convert.Convert(decl.def, decl.typ); err != nil {
			return cty.DynamicVal, s.fail(decl.rng, "Invalid default value for variable", err.Error())
		}
	}
	if decl.sensitive {
		val = val.Mark(markSensitive)
	}
	if decl.ephemeral {
		val = val.Mark(markEphemeral)
	}
	return val, nil
}

const (
	markSensitive = "sensitive"
	markEphemeral = "ephemeral"
)

// given is the value given for a variable: for the root module from Vars,
// for a called module by its call's argument. given is false when none
// is, and an error when the variable has no default either.
func (s *staticScope) given(decl *varDecl, need string, depth int) (cty.Value, bool, hcl.Diagnostics) {
	if s.f.call == nil {
		raw, ok := s.l.vals[decl.name]
		if !ok {
			if decl.required() {
				return cty.DynamicVal, false, s.fail(decl.rng, "No value for required variable", fmt.Sprintf(
					"The root module variable %q has no default and no value was given, and %s needs it: give it with --var %s=VALUE, --var-file FILE, the environment variable %s%s or terraform.tfvars.",
					decl.name, need, decl.name, varEnvPrefix, decl.name))
			}
			return cty.NilVal, false, nil
		}
		v, d := raw.parse(decl)
		if d.HasErrors() {
			return cty.DynamicVal, false, append(d, s.fail(decl.rng, "Invalid value for input variable",
				fmt.Sprintf("The value of var.%s from %s could not be read; %s needs it.", decl.name, raw.source, need))...)
		}
		return v, true, nil
	}
	arg, ok := s.f.call.args[decl.name]
	if !ok {
		if decl.required() {
			return cty.DynamicVal, false, s.fail(s.f.call.rng, "Missing required variable in module call", fmt.Sprintf(
				"%s does not set the variable %q, which has no default, and %s needs it.", s.f.addr(), decl.name, need))
		}
		return cty.NilVal, false, nil
	}
	v, d := s.l.scopeOf(s.f.parent).eval(arg.Expr, need, depth+1)
	return v, !d.HasErrors(), d
}

// modulePath is path.module: the module's directory relative to the root
// module's, as OpenTofu gives it when run in the root module directory.
func (s *staticScope) modulePath() string {
	rel, err := filepath.Rel(s.l.root, s.f.dir)
	if err != nil {
		return filepath.ToSlash(s.f.dir)
	}
	return filepath.ToSlash(rel)
}

// workspace is terraform.workspace: TF_WORKSPACE, else the workspace
// .terraform/environment names, else "default".
func (l *loader) workspace() string {
	for _, kv := range l.environ {
		if v, ok := strings.CutPrefix(kv, "TF_WORKSPACE="); ok && v != "" {
			return v
		}
	}
	src, err := hclsafe.ReadFile(filepath.Join(l.root, ".terraform", "environment"), 256)
	if name := strings.TrimSpace(string(src)); err == nil && name != "" {
		return name
	}
	return "default"
}

// unboundedExpr refuses the expressions whose result can grow past any
// bound from a few bytes: for expressions and template directives.
func unboundedExpr(expr hcl.Expression, need string) *hcl.Diagnostic {
	node, ok := expr.(hclsyntax.Node)
	if !ok {
		return unboundedJSON(expr, need)
	}
	var found hcl.Range
	_ = hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n.(type) {
		case *hclsyntax.ForExpr, *hclsyntax.TemplateJoinExpr:
			if found.Filename == "" {
				found = n.Range()
			}
		}
		return nil
	})
	if found.Filename == "" {
		return nil
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Expression not evaluated by tfmirror",
		Detail:  fmt.Sprintf("tfmirror does not evaluate for expressions or template directives in what %s needs.", need),
		Subject: found.Ptr()}
}

// staticCalls returns the module instance's calls with a source or
// version that is not a literal evaluated for this instance; literal
// calls are returned as they are. In a fetched package (ModuleCalls),
// whose root variables have no values, one that cannot be evaluated
// stays unevaluated, as before: no constraint, not followed.
func (l *loader) staticCalls(f *frame, m *module) []*callDecl {
	out := make([]*callDecl, 0, len(m.calls))
	for _, c := range m.calls {
		srcDyn := c.sourceAttr != nil && needsEval(c.sourceAttr.Expr)
		verDyn := c.versionAttr != nil && needsEval(c.versionAttr.Expr)
		if !srcDyn && !verDyn {
			out = append(out, c)
			continue
		}
		cc := *c
		var diags hcl.Diagnostics
		where := fmt.Sprintf("%s:%d", c.rng.Filename, c.rng.Start.Line)
		callAddr := moduleAddr(append(append([]string(nil), f.path...), c.name))
		s := l.scopeOf(f)
		l.evalBytes = 0
		if verDyn {
			diags = append(diags, evalVersion(s, &cc, fmt.Sprintf("the version of %s (%s)", callAddr, where))...)
		}
		if srcDyn {
			diags = append(diags, evalSource(s, &cc, fmt.Sprintf("the source of %s (%s)", callAddr, where))...)
		}
		if l.pkg == "" {
			l.report(diags)
		}
		out = append(out, &cc)
	}
	return out
}

// evalSource evaluates a call's source: a string, not sensitive.
func evalSource(s *staticScope, c *callDecl, need string) hcl.Diagnostics {
	val, diags := s.eval(c.sourceAttr.Expr, need, 0)
	if diags.HasErrors() {
		return diags
	}
	if d := markedValue(val, c.sourceAttr, need); d != nil {
		return hcl.Diagnostics{d}
	}
	str, err := convert.Convert(val, cty.String)
	if err != nil || str.IsNull() {
		return s.fail(c.sourceAttr.Expr.Range(), "Invalid module source", fmt.Sprintf("%s must be a string.", need))
	}
	c.source, c.static = str.AsString(), true
	return nil
}

// evalVersion evaluates a call's version: null is no constraint, as in
// OpenTofu; anything else is checked as a literal one is.
func evalVersion(s *staticScope, c *callDecl, need string) hcl.Diagnostics {
	val, diags := s.eval(c.versionAttr.Expr, need, 0)
	if diags.HasErrors() {
		return diags
	}
	if d := markedValue(val, c.versionAttr, need); d != nil {
		return hcl.Diagnostics{d}
	}
	c.versionDynamic, c.version = false, nil
	if !val.IsNull() {
		c.version, _ = versionFromValue(val, c.versionAttr, &diags)
	}
	return diags
}

// markedValue refuses a sensitive or ephemeral value, as OpenTofu does.
func markedValue(val cty.Value, attr *hcl.Attribute, need string) *hcl.Diagnostic {
	for _, mark := range []string{markSensitive, markEphemeral} {
		if val.HasMarkDeep(mark) {
			return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: mark + " value not allowed",
				Detail:  fmt.Sprintf("%s values, or values derived from them, cannot be used as %s.", mark, need),
				Subject: attr.Expr.Range().Ptr()}
		}
	}
	return nil
}

// needsEval reports whether an expression is more than a literal: it
// refers to something or calls a function.
func needsEval(expr hcl.Expression) bool {
	_, d := expr.Value(nil)
	return d.HasErrors() || !isLiteral(expr)
}

// unboundedJSON refuses a JSON expression whose strings hold template
// directives: without an evaluation context a JSON expression's value is
// its strings as written.
func unboundedJSON(expr hcl.Expression, need string) *hcl.Diagnostic {
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return nil
	}
	found := false
	_ = cty.Walk(v, func(_ cty.Path, v cty.Value) (bool, error) {
		if v.IsKnown() && !v.IsNull() && v.Type() == cty.String && strings.Contains(v.AsString(), "%{") {
			found = true
		}
		return !found, nil
	})
	if !found {
		return nil
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Expression not evaluated by tfmirror",
		Detail:  fmt.Sprintf("tfmirror does not evaluate for expressions or template directives in what %s needs.", need),
		Subject: expr.Range().Ptr()}
}

package tfconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Options say how a root module is read. Its input variables take their
// values as for "tofu init": TF_VAR_name in Environ, then the root
// directory's terraform.tfvars, terraform.tfvars.json and *.auto.tfvars
// (.json) files in name order, then Args in their order, each source
// replacing the values of the ones before it.
type Options struct {
	Args    []VarArg
	Environ []string // os.Environ's form
	// NoTests leaves out what test files need (see LoadWith).
	NoTests bool
	// Terraform reads the configuration as Terraform does, not OpenTofu:
	// a provider address without a host names registry.terraform.io's
	// provider, and .tofu and .tofu.json files are not read.
	Terraform bool
}

// VarArg is one --var NAME=VALUE (File false) or --var-file FILE.
type VarArg struct {
	File  bool
	Value string
}

// rawValue is a variable's value before its declaration is known: a
// string (from TF_VAR_ or --var), parsed by the variable's type, or an
// expression from a variables file.
type rawValue struct {
	str    string
	expr   hcl.Expression
	source string // where it came from, for messages
}

const varEnvPrefix = "TF_VAR_"

// rootValues collects the values of the root module in dir.
func rootValues(dir string, vars Options) (map[string]rawValue, []Problem) {
	out := map[string]rawValue{}
	for _, kv := range vars.Environ {
		name, val, ok := strings.Cut(strings.TrimPrefix(kv, varEnvPrefix), "=")
		if ok && strings.HasPrefix(kv, varEnvPrefix) {
			out[name] = rawValue{str: val, source: "environment variable " + varEnvPrefix + name}
		}
	}
	var problems []Problem
	for _, file := range autoVarFiles(dir) {
		problems = append(problems, readVarsFile(file, out)...)
	}
	for _, a := range vars.Args {
		if a.File {
			problems = append(problems, readVarsFile(a.Value, out)...)
			continue
		}
		name, val, ok := strings.Cut(a.Value, "=")
		switch {
		case !ok:
			problems = append(problems, Problem{Summary: "Invalid --var option", Detail: fmt.Sprintf(
				"The given --var option %q is not correctly specified. Must be a variable name and value separated by an equals sign, like --var=\"key=value\".", a.Value)})
		case strings.HasSuffix(name, " "):
			problems = append(problems, Problem{Summary: "Invalid --var option", Detail: fmt.Sprintf(
				"Variable name %q is invalid due to trailing space. Did you mean --var=\"%s=%s\"?", name, strings.TrimSuffix(name, " "), strings.TrimPrefix(val, " "))})
		default:
			out[name] = rawValue{str: val, source: "--var " + name}
		}
	}
	return out, problems
}

// autoVarFiles lists the variables files OpenTofu reads by itself from
// the root module directory, in its order.
func autoVarFiles(dir string) []string {
	var files []string
	for _, name := range []string{"terraform.tfvars", "terraform.tfvars.json"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && !info.IsDir() {
			files = append(files, filepath.Join(dir, name))
		}
	}
	entries, _ := os.ReadDir(dir) // sorted by name
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, ".auto.tfvars") || strings.HasSuffix(name, ".auto.tfvars.json") {
			files = append(files, filepath.Join(dir, name))
		}
	}
	return files
}

// readVarsFile reads a variables file as OpenTofu does (JSON for a .json
// name, or for another name than .tfvars whose content starts with "{"),
// bounded as a configuration file, into to.
func readVarsFile(file string, to map[string]rawValue) []Problem {
	body, diags := parseVarsFile(file)
	if body == nil {
		return diagProblems(diags)
	}
	content, _, _ := body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "variable", LabelNames: []string{"name"}}}})
	for _, block := range content.Blocks {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Variable declaration in .tfvars file",
			Detail:   fmt.Sprintf("A .tfvars file is used to assign values to variables that have already been declared in .tf files, not to declare new variables. To declare variable %q, place this block in one of your .tf files.", block.Labels[0]),
			Subject:  &block.TypeRange,
		})
	}
	if diags.HasErrors() {
		return diagProblems(diags)
	}
	attrs, d := body.JustAttributes()
	diags = append(diags, d...)
	for name, attr := range attrs {
		to[name] = rawValue{expr: attr.Expr, source: fmt.Sprintf("%s:%d", attr.Range.Filename, attr.Range.Start.Line)}
	}
	return diagProblems(diags)
}

// parseVarsFile parses a variables file with the limits of a
// configuration file: JSON for a .json name, or for a name not ending in
// .tfvars whose content starts with "{", as OpenTofu decides.
func parseVarsFile(file string) (hcl.Body, hcl.Diagnostics) {
	return parseFileAs(file, filepath.ToSlash(file), nil, func(src []byte) bool {
		if strings.HasSuffix(file, ".json") {
			return true
		}
		return !strings.HasSuffix(file, ".tfvars") && strings.HasPrefix(strings.TrimSpace(string(src)), "{")
	})
}

func diagProblems(diags hcl.Diagnostics) []Problem {
	var out []Problem
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, diagProblem(d))
		}
	}
	return out
}

// parse turns a raw value into the variable's value, as OpenTofu's
// parsing modes do: a string as itself for a variable without a type or
// of a primitive type, else as an HCL expression; a file's expression as
// a constant.
func (r rawValue) parse(v *varDecl) (cty.Value, hcl.Diagnostics) {
	if r.expr != nil {
		return r.expr.Value(nil)
	}
	if v.literalParsing() {
		return cty.StringVal(r.str), nil
	}
	expr, diags := hclsyntax.ParseExpression([]byte(r.str), fmt.Sprintf("<value for var.%s>", v.name), hcl.Pos{Line: 1, Column: 1})
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return expr.Value(nil)
}

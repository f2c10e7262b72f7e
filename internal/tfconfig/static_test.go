package tfconfig

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// modulesOf keys Root.Modules by the packages' string form.
func modulesOf(r *Root) map[string][]Constraint {
	out := map[string][]Constraint{}
	for m, cs := range r.Modules {
		out[m.String()] = cs
	}
	return out
}

const staticRoot = `
variable "ns" {
  type    = string
  default = "acme"
}
variable "ver" {
  default = "~> 1.0"
}
locals {
  name = "net"
  src  = "${var.ns}/${local.name}/aws"
}
module "net" {
  source  = local.src
  version = var.ver
}
`

// TestStaticSourceAndVersion: variables (defaults, files, TF_VAR_, --var,
// --var-file) and locals in a module call's source and version, in
// OpenTofu's precedence.
func TestStaticSourceAndVersion(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		vars  Options
		want  map[string][]Constraint
	}{
		{
			name: "defaults and locals",
			want: map[string][]Constraint{"registry.opentofu.org/acme/net/aws": cs("~> 1.0", "root/main.tf:15")},
		},
		{
			name: "TF_VAR_",
			vars: Options{Environ: []string{"TF_VAR_ns=env", "TF_VAR_ver=2.0.0", "OTHER=x"}},
			want: map[string][]Constraint{"registry.opentofu.org/env/net/aws": cs("2.0.0", "root/main.tf:15")},
		},
		{
			name:  "terraform.tfvars over TF_VAR_, auto files over terraform.tfvars, in name order",
			files: map[string]string{"terraform.tfvars": `ns = "tfvars"` + "\nver = \"1.1.0\"\n", "b.auto.tfvars": `ver = "1.3.0"`, "a.auto.tfvars.json": `{"ver": "1.2.0"}`},
			vars:  Options{Environ: []string{"TF_VAR_ns=env", "TF_VAR_ver=2.0.0"}},
			want:  map[string][]Constraint{"registry.opentofu.org/tfvars/net/aws": cs("1.3.0", "root/main.tf:15")},
		},
		{
			name:  "flags over files, in their order",
			files: map[string]string{"terraform.tfvars": `ns = "tfvars"`, "../extra.tfvars": `ver = "3.0.0"` + "\nns = \"file\"\n"},
			vars:  Options{Args: []VarArg{{Value: "ver=9.9.9"}, {File: true, Value: "extra.tfvars"}, {Value: "ns=flag"}}},
			want:  map[string][]Constraint{"registry.opentofu.org/flag/net/aws": cs("3.0.0", "root/main.tf:15")},
		},
		{
			name:  "null version is no constraint",
			vars:  Options{Args: []VarArg{{File: true, Value: "null.tfvars"}}},
			files: map[string]string{"../null.tfvars": `ver = null`},
			want:  map[string][]Constraint{"registry.opentofu.org/acme/net/aws": none()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"root/main.tf": staticRoot}
			for name, content := range tt.files {
				files[filepath.ToSlash(filepath.Clean("root/"+name))] = content
			}
			dir := writeTree(t, files)
			for i, a := range tt.vars.Args {
				if a.File {
					tt.vars.Args[i].Value = filepath.Join(dir, a.Value)
				}
			}
			r, err := LoadWith(from(t, dir, "root"), tt.vars)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, modulesOf(r)); diff != "" {
				t.Errorf("modules (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStaticChildModule: a local module's calls see the values its
// caller passes, evaluated in the caller; functions are evaluated.
func TestStaticChildModule(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf": `
variable "env" {}
module "app" {
  source = "./app"
  prefix = upper(var.env)
}`,
		"root/app/main.tf": `
variable "prefix" {}
variable "major" {
  type    = number
  default = 2
}
module "db" {
  source  = format("%s/db/aws", lower(var.prefix))
  version = "~> ${var.major}.0"
}`,
	})
	r, err := LoadWith(from(t, dir, "root"), Options{Args: []VarArg{{Value: "env=Prod"}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Constraint{"registry.opentofu.org/prod/db/aws": cs("~> 2.0", "root/app/main.tf:9")}
	if diff := cmp.Diff(want, modulesOf(r)); diff != "" {
		t.Errorf("modules (-want +got):\n%s", diff)
	}
}

// TestStaticLocalSource: a local path from a variable is followed.
func TestStaticLocalSource(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf":   `variable "dir" { default = "b" }` + "\n" + `module "m" { source = "./${var.dir}" }`,
		"root/a/main.tf": "terraform {\n  required_providers {\n    x = { source = \"acme/a\" }\n  }\n}\n",
		"root/b/main.tf": "terraform {\n  required_providers {\n    x = { source = \"acme/b\" }\n  }\n}\n",
	})
	r, err := LoadWith(from(t, dir, "root"), Options{Environ: []string{"TF_VAR_dir=a"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]Constraint{"registry.opentofu.org/acme/a": none()}, byAddress(r)); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
}

// TestStaticErrors: each value that cannot be had is a problem naming
// the variable or reference, the module call and its file:line.
func TestStaticErrors(t *testing.T) {
	tests := []struct {
		name string
		tf   string
		json string // main.tf.json instead of tf
		vars Options
		want []string
	}{
		{
			name: "required variable without a value",
			tf:   `variable "ns" {}` + "\n" + `module "net" { source = "${var.ns}/net/aws" }`,
			want: []string{`root/main.tf:1:1: No value for required variable: The root module variable "ns" has no default and no value was given, and the source of module.net (root/main.tf:2) needs it: give it with --var ns=VALUE`},
		},
		{
			name: "resource reference",
			tf:   `module "net" { source = aws_s3_bucket.b.id }`,
			want: []string{"root/main.tf:1:25: Dynamic value in static context: Unable to use aws_s3_bucket.b in static context, which is required by the source of module.net (root/main.tf:1)"},
		},
		{
			name: "module output",
			tf:   `module "a" { source = "./a" }` + "\n" + `module "net" { source = module.a.src }`,
			want: []string{"Dynamic value in static context: Unable to use module.a in static context"},
		},
		{
			name: "undefined variable",
			tf:   `module "net" { source = var.nope }`,
			want: []string{"Undefined variable: Undefined variable var.nope, needed by the source of module.net (root/main.tf:1)."},
		},
		{
			name: "undefined local",
			tf:   `module "net" { source = local.nope }`,
			want: []string{"Undefined local: Undefined local local.nope"},
		},
		{
			name: "circular locals",
			tf:   "locals {\n  a = local.b\n  b = local.a\n}\n" + `module "net" { source = local.a }`,
			want: []string{"Circular reference"},
		},
		{
			name: "sensitive variable",
			tf:   `variable "s" {` + "\n" + `  default = "x/y/z"` + "\n  sensitive = true\n}\n" + `module "net" { source = var.s }`,
			want: []string{"sensitive value not allowed"},
		},
		{
			name: "sensitive list through a function",
			tf:   `variable "s" {` + "\n" + `  default = ["x", "y", "z"]` + "\n  sensitive = true\n}\n" + `module "net" { source = join("/", var.s) }`,
			want: []string{"sensitive value not allowed"},
		},
		{
			name: "const = false",
			tf:   `variable "s" {` + "\n" + `  default = "x/y/z"` + "\n  const = false\n}\n" + `module "net" { source = var.s }`,
			want: []string{`Unable to use variable in static context: The variable "s" cannot be used in a static context`},
		},
		{
			name: "function not evaluated",
			tf:   `module "net" { source = file("x") }`,
			want: []string{`Call to unknown function`},
		},
		{
			name: "for expression",
			tf:   `module "net" { source = join("", [for s in ["a"] : s]) }`,
			want: []string{"Expression not evaluated by tfmirror"},
		},
		{
			name: "template directive in JSON",
			json: `{"locals": {"l": "%{ for s in [\"a\"] }${s}%{ endfor }"}, "module": {"net": {"source": "${local.l}/b/c"}}}`,
			want: []string{"Expression not evaluated by tfmirror"},
		},
		{
			name: "wrong type from --var",
			tf:   `variable "n" { type = number }` + "\n" + `module "net" { source = "x/${var.n}/aws" }`,
			vars: Options{Args: []VarArg{{Value: "n=abc"}}},
			want: []string{"Invalid value for input variable: The given value is not suitable for var.n"},
		},
		{
			name: "--var without =",
			tf:   `module "net" { source = "x/y/aws" }`,
			vars: Options{Args: []VarArg{{Value: "ns"}}},
			want: []string{`Invalid --var option: The given --var option "ns" is not correctly specified.`},
		},
		{
			name: "missing --var-file",
			tf:   `module "net" { source = "x/y/aws" }`,
			vars: Options{Args: []VarArg{{File: true, Value: "/nonexistent/x.tfvars"}}},
			want: []string{"/nonexistent/x.tfvars"},
		},
		{
			name: "variable block in a tfvars file",
			tf:   `module "net" { source = "x/y/aws" }`,
			vars: Options{Args: []VarArg{{File: true, Value: "VARFILE"}}},
			want: []string{"Variable declaration in .tfvars file"},
		},
		{
			name: "invalid version from a variable",
			tf:   `variable "v" { default = "~> 1.x" }` + "\n" + `module "net" {` + "\n  source = \"x/y/aws\"\n  version = var.v\n}",
			want: []string{"root/main.tf:4"},
		},
		{
			name: "doubling locals stay bounded",
			tf:   doublingLocals(30) + `module "net" { source = local.l30 }`,
			want: []string{"Value too large"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"root/main.tf": tt.tf, "bad.tfvars": `variable "x" {}`}
			if tt.json != "" {
				files = map[string]string{"root/main.tf.json": tt.json}
			}
			dir := writeTree(t, files)
			for i, a := range tt.vars.Args {
				if a.Value == "VARFILE" {
					tt.vars.Args[i].Value = filepath.Join(dir, "bad.tfvars")
				}
			}
			_, err := LoadWith(from(t, dir, "root"), tt.vars)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func doublingLocals(n int) string {
	var b strings.Builder
	b.WriteString("locals {\n  l0 = \"ab\"\n")
	for i := 1; i <= n; i++ {
		b.WriteString("  l" + strconv.Itoa(i) + " = \"${local.l" + strconv.Itoa(i-1) + "}${local.l" + strconv.Itoa(i-1) + "}\"\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// TestStaticModuleCallsDefaults: in a fetched package, a call whose
// source or version needs a value the package does not have stays
// unevaluated (no constraint), and one that defaults give is evaluated.
func TestStaticModuleCallsDefaults(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"main.tf": `
variable "v" { default = "~> 3.0" }
variable "req" {}
module "a" {
  source  = "acme/a/aws"
  version = var.v
}
module "b" {
  source  = "acme/b/aws"
  version = var.req
}`,
	})
	got, _, err := ModuleCalls(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Constraint{
		"registry.opentofu.org/acme/a/aws": cs("~> 3.0", "main.tf:6"),
		"registry.opentofu.org/acme/b/aws": none(),
	}
	out := map[string][]Constraint{}
	for m, c := range got {
		out[m.String()] = c
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("modules (-want +got):\n%s", diff)
	}
}

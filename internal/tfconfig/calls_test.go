package tfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// byModule keys module calls by the package's string form.
func byModule(mods map[addrs.Module][]Constraint) map[string][]Constraint {
	out := map[string][]Constraint{}
	for m, cs := range mods {
		if cs == nil {
			cs = []Constraint{{Text: "BUG: nil slice"}}
		}
		out[m.String()] = cs
	}
	return out
}

const (
	consul = "registry.opentofu.org/hashicorp/consul/aws"
	vpc    = "registry.opentofu.org/terraform-aws-modules/vpc/aws"
	netMod = "example.com/acme/net/aws"
	tfNet  = "registry.terraform.io/x/y/aws"
)

func notInstalled(addr, src, where string) string {
	return addr + " (" + src + ") in " + where + ` is not installed under .terraform/modules; run "tofu init" to include its providers`
}

type modulesTest struct {
	name         string
	files        map[string]string
	want         map[string][]Constraint
	wantWarnings []string
	wantErr      []string
}

func runModulesTests(t *testing.T, tests []modulesTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			r, err := Load(from(t, dir, "root"))
			if len(tt.wantErr) > 0 {
				var lerr *Error
				if !errors.As(err, &lerr) {
					t.Fatalf("Load: %v, want an *Error", err)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Load error:\n%v\nwant it to contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if diff := cmp.Diff(tt.want, byModule(r.Modules)); diff != "" {
				t.Errorf("modules (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, r.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadRegistryModules(t *testing.T) {
	runModulesTests(t, []modulesTest{
		{
			name: "registry sources with and without versions",
			files: map[string]string{"root/main.tf": `
module "consul" {
  source  = "hashicorp/consul/aws"
  version = "~> 0.1"
}
module "consul_again" {
  source = "hashicorp/consul/aws//modules/consul-cluster"
  version = ">= 0.1.2, < 1.0.0"
}
module "vpc" {
  source = "terraform-aws-modules/vpc/aws"
}
module "net" {
  source  = "Example.COM/acme/net/aws"
  version = 2
}
module "nulled" {
  source  = "registry.terraform.io/x/y/aws"
  version = null
}
`},
			want: map[string][]Constraint{
				consul: cs("~> 0.1", "root/main.tf:4", ">= 0.1.2, < 1.0.0", "root/main.tf:8"),
				vpc:    none(),
				netMod: cs("2", "root/main.tf:15"),
				tfNet:  none(),
			},
			wantWarnings: []string{
				notInstalled("module.consul", "hashicorp/consul/aws", "root/main.tf:2"),
				notInstalled("module.consul_again", "hashicorp/consul/aws//modules/consul-cluster", "root/main.tf:6"),
				notInstalled("module.net", "Example.COM/acme/net/aws", "root/main.tf:13"),
				notInstalled("module.nulled", "registry.terraform.io/x/y/aws", "root/main.tf:17"),
				notInstalled("module.vpc", "terraform-aws-modules/vpc/aws", "root/main.tf:10"),
			},
		},
		{
			name: "other sources are not registry sources",
			files: map[string]string{
				"root/main.tf": `
module "local" { source = "./local" }
module "git" {
  source  = "git::https://example.com/vpc.git?ref=v1.2.0"
  version = "1.0.0"
}
module "github" { source = "github.com/hashicorp/example" }
module "github4" { source = "github.com/hashicorp/example/aws" }
module "bitbucket" { source = "bitbucket.org/hashicorp/example/aws" }
module "https" { source = "https://example.com/vpc-module.zip" }
module "s3" { source = "s3::https://s3-eu-west-1.amazonaws.com/examplecorp-terraform-modules/vpc.zip" }
module "gcs" { source = "gcs::https://www.googleapis.com/storage/v1/modules/foomodule.zip" }
module "oci" { source = "oci://example.com/repository" }
module "query" { source = "hashicorp/consul/aws?ref=v1" }
module "abs" { source = "/opt/modules/a/b" }
module "two" { source = "hashicorp/consul" }
`,
				"root/local/main.tf": `resource "foo_x" "y" {}`,
			},
			want: map[string][]Constraint{},
			wantWarnings: []string{
				notInstalled("module.abs", "/opt/modules/a/b", "root/main.tf:15"),
				notInstalled("module.bitbucket", "bitbucket.org/hashicorp/example/aws", "root/main.tf:9"),
				notInstalled("module.gcs", "gcs::https://www.googleapis.com/storage/v1/modules/foomodule.zip", "root/main.tf:12"),
				notInstalled("module.git", "git::https://example.com/vpc.git?ref=v1.2.0", "root/main.tf:3"),
				notInstalled("module.github", "github.com/hashicorp/example", "root/main.tf:7"),
				notInstalled("module.github4", "github.com/hashicorp/example/aws", "root/main.tf:8"),
				notInstalled("module.https", "https://example.com/vpc-module.zip", "root/main.tf:10"),
				notInstalled("module.oci", "oci://example.com/repository", "root/main.tf:13"),
				notInstalled("module.query", "hashicorp/consul/aws?ref=v1", "root/main.tf:14"),
				notInstalled("module.s3", "s3::https://s3-eu-west-1.amazonaws.com/examplecorp-terraform-modules/vpc.zip", "root/main.tf:11"),
				notInstalled("module.two", "hashicorp/consul", "root/main.tf:16"),
			},
		},
		{
			name: "JSON syntax",
			files: map[string]string{"root/main.tf.json": `{
  "variable": {"v": {"default": "~> 2.0"}, "ns": {"default": "hashicorp"}},
  "module": {
    "consul": {"source": "hashicorp/consul/aws", "version": "~> 0.1"},
    "vpc": [{"source": "terraform-aws-modules/vpc/aws"}],
    "dyn": {"source": "example.com/acme/net/aws", "version": "${var.v}"},
    "tmpl": {"source": "${var.ns}/consul/aws", "version": "1.0.0"}
  }
}`},
			// Templates in JSON strings are evaluated as OpenTofu does.
			want: map[string][]Constraint{consul: cs("~> 0.1", "root/main.tf.json:4", "1.0.0", "root/main.tf.json:7"), vpc: none(), netMod: cs("~> 2.0", "root/main.tf.json:6")},
			wantWarnings: []string{
				notInstalled("module.consul", "hashicorp/consul/aws", "root/main.tf.json:4"),
				notInstalled("module.dyn", "example.com/acme/net/aws", "root/main.tf.json:6"),
				notInstalled("module.tmpl", "hashicorp/consul/aws", "root/main.tf.json:7"),
				notInstalled("module.vpc", "terraform-aws-modules/vpc/aws", "root/main.tf.json:5"),
			},
		},
		{
			name: "nested local modules in module path order",
			files: map[string]string{
				"root/main.tf": `
module "b" { source = "./b" }
module "a" { source = "../shared/a" }
module "top" {
  source  = "hashicorp/consul/aws"
  version = "< 2.0.0"
}
`,
				"root/b/main.tf": `
module "again" { source = "../../shared/a" }
module "c" {
  source  = "hashicorp/consul/aws"
  version = ">= 0.5.0"
}
`,
				"shared/a/main.tf": `
module "deep" { source = "./deep" }
module "c" {
  source  = "hashicorp/consul/aws"
  version = "!= 0.7.0"
}
`,
				"shared/a/deep/main.tf": `
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "5.1.0"
}
`,
			},
			want: map[string][]Constraint{
				consul: cs("< 2.0.0", "root/main.tf:6", "!= 0.7.0", "shared/a/main.tf:5", ">= 0.5.0", "root/b/main.tf:5"),
				vpc:    cs("5.1.0", "shared/a/deep/main.tf:4"),
			},
			wantWarnings: []string{
				notInstalled("module.a.module.c", "hashicorp/consul/aws", "shared/a/main.tf:3"),
				notInstalled("module.a.module.deep.module.vpc", "terraform-aws-modules/vpc/aws", "shared/a/deep/main.tf:2"),
				notInstalled("module.b.module.again.module.c", "hashicorp/consul/aws", "shared/a/main.tf:3"),
				notInstalled("module.b.module.again.module.deep.module.vpc", "terraform-aws-modules/vpc/aws", "shared/a/deep/main.tf:2"),
				notInstalled("module.b.module.c", "hashicorp/consul/aws", "root/b/main.tf:3"),
				notInstalled("module.top", "hashicorp/consul/aws", "root/main.tf:4"),
			},
		},
		{
			name: "override files change the version and the source",
			files: map[string]string{
				"root/main.tf": `
module "consul" {
  source  = "hashicorp/consul/aws"
  version = "~> 0.1"
}
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
module "gone" {
  source  = "example.com/acme/net/aws"
  version = "1.0.0"
}
`,
				"root/override.tf": `
module "consul" {
  version = "~> 0.2"
}
module "gone" {
  source = "./net"
}
`,
				"root/z_override.tf.json": `{"module": {"vpc": {"version": "~> 6.0"}}}`,
				"root/net/main.tf":        `resource "foo_x" "y" {}`,
			},
			want: map[string][]Constraint{
				consul: cs("~> 0.2", "root/override.tf:3"),
				vpc:    cs("~> 6.0", "root/z_override.tf.json:1"),
			},
			wantWarnings: []string{
				notInstalled("module.consul", "hashicorp/consul/aws", "root/main.tf:2"),
				notInstalled("module.vpc", "terraform-aws-modules/vpc/aws", "root/main.tf:6"),
			},
		},
		{
			name: "installed remote modules are followed",
			files: map[string]string{
				"root/main.tf": `
module "net" {
  source  = "registry.terraform.io/x/y/aws"
  version = "~> 1.0"
}
`,
				"root/.terraform/modules/modules.json": `{"Modules":[
  {"Key":"net","Source":"registry.terraform.io/x/y/aws","Version":"1.0.0","Dir":".terraform/modules/net"}
]}`,
				"root/.terraform/modules/net/main.tf": `
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = ">= 5.0.0"
}
`,
			},
			want: map[string][]Constraint{
				tfNet: cs("~> 1.0", "root/main.tf:4"),
				vpc:   cs(">= 5.0.0", "root/.terraform/modules/net/main.tf:4"),
			},
			wantWarnings: []string{
				notInstalled("module.net.module.vpc", "terraform-aws-modules/vpc/aws", "root/.terraform/modules/net/main.tf:2"),
			},
		},
		{
			name: "same module reached twice counts its constraints once",
			files: map[string]string{
				"root/main.tf": `
module "a" { source = "./m" }
module "b" { source = "./m/" }
`,
				"root/m/main.tf": `
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
`,
			},
			want: map[string][]Constraint{vpc: cs("~> 5.0", "root/m/main.tf:4")},
			wantWarnings: []string{
				notInstalled("module.a.module.vpc", "terraform-aws-modules/vpc/aws", "root/m/main.tf:2"),
				notInstalled("module.b.module.vpc", "terraform-aws-modules/vpc/aws", "root/m/main.tf:2"),
			},
		},
		{
			name: "calls without a version next to calls with one",
			files: map[string]string{
				"root/main.tf": `
module "any" { source = "terraform-aws-modules/vpc/aws" }
module "pinned" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
module "m" { source = "./m" }
`,
				"root/m/main.tf": `
variable "v" { default = null }
module "dyn" {
  source  = "terraform-aws-modules/vpc/aws//modules/endpoints"
  version = var.v
}
module "also_any" { source = "terraform-aws-modules/vpc/aws" }
`,
			},
			want: map[string][]Constraint{vpc: cs("", "root/main.tf:2", "~> 5.0", "root/main.tf:5", "", "root/m/main.tf:3", "", "root/m/main.tf:7")},
			wantWarnings: []string{
				notInstalled("module.any", "terraform-aws-modules/vpc/aws", "root/main.tf:2"),
				notInstalled("module.m.module.also_any", "terraform-aws-modules/vpc/aws", "root/m/main.tf:7"),
				notInstalled("module.m.module.dyn", "terraform-aws-modules/vpc/aws//modules/endpoints", "root/m/main.tf:3"),
				notInstalled("module.pinned", "terraform-aws-modules/vpc/aws", "root/main.tf:3"),
			},
		},
		{
			name: "version from a variable's default",
			files: map[string]string{"root/main.tf": `
variable "v" { default = "1.0.0" }
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = var.v
}
`},
			want: map[string][]Constraint{vpc: cs("1.0.0", "root/main.tf:5")},
			wantWarnings: []string{
				notInstalled("module.vpc", "terraform-aws-modules/vpc/aws", "root/main.tf:3"),
			},
		},
		{
			name: "invalid constraints",
			files: map[string]string{
				"root/main.tf": `
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "not a version"
}
module "consul" {
  source  = "hashicorp/consul/aws"
  version = ["1.0.0"]
}
module "local" {
  source  = "./l"
  version = "=> 1"
}
`,
				"root/l/main.tf":     ``,
				"root/main2.tf.json": `{"module": {"j": {"source": "a/b/c", "version": ""}}}`,
			},
			wantErr: []string{
				`root/main.tf:4:13: Invalid version constraint: "not a version" does not use correct version constraint syntax.`,
				`root/main.tf:8:13: Invalid version constraint: A string value is required for version.`,
				`root/main.tf:12:13: Invalid version constraint: "=> 1" does not use correct version constraint syntax.`,
				`root/main2.tf.json:1:49: Invalid version constraint: "" does not use correct version constraint syntax.`,
			},
		},
		{
			name: "constraint that allows no version",
			files: map[string]string{"root/main.tf": `
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = ">= 6.0, < 5.0"
}
`},
			wantErr: []string{`root/main.tf:4:13: Version constraint allows no version: module.vpc (terraform-aws-modules/vpc/aws) asks for version ">= 6.0, < 5.0", which no version can satisfy`},
		},
		{
			name: "registry host with a port",
			files: map[string]string{"root/main.tf": `
module "vpc" {
  source = "registry.example:8443/acme/vpc/aws"
}
`},
			wantErr: []string{`root/main.tf:2:1: Unsupported module registry address: module.vpc calls registry.example:8443/acme/vpc/aws, which tfmirror cannot mirror: invalid module address "registry.example:8443/acme/vpc/aws": a registry host with a port cannot be mirrored.`},
		},
	})
}

func TestModuleCalls(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pkg/main.tf": `
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5.0" }
  }
}
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
module "sub" { source = "./modules/sub" }
module "git" { source = "git::https://example.com/x.git" }
module "dyn" { source = var.src }
`,
		"pkg/modules/sub/main.tf": `
module "sibling" { source = "../sibling" }
module "consul" {
  source = "hashicorp/consul/aws//modules/x"
}
`,
		"pkg/modules/sibling/main.tf.json": `{"module": {"net": {"source": "example.com/acme/net/aws", "version": ">= 1.0.0"}, "dyn": {"source": "example.com/acme/net/aws", "version": "${var.v}"}}}`,
		// Never read: ModuleCalls reads packages, not working directories.
		"pkg/.terraform/modules/modules.json": `{"Modules":[{"Key":"git","Source":"git::https://example.com/x.git","Dir":".terraform/modules/git"}]}`,
		"pkg/.terraform/modules/git/main.tf":  `module "hidden" { source = "acme/hidden/aws" }`,
	})
	pkg := filepath.Join(dir, "pkg")

	got, warnings, err := ModuleCalls(pkg, "")
	if err != nil {
		t.Fatalf("ModuleCalls: %v", err)
	}
	// The calls not followed that init would still make are said: the
	// git source, the source from the caller's value, the version that
	// is not a literal.
	for _, want := range []string{
		`module.git in main.tf:12 calls "git::https://example.com/x.git", which is not a module registry package`,
		`module.dyn in main.tf:13: its source needs a value the package has no default for`,
		`has a version that is not a literal string; no version constraint is taken from it`,
	} {
		if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no warning says %q: %q", want, warnings)
		}
	}
	want := map[string][]Constraint{
		vpc:    cs("~> 5.0", "main.tf:9"),
		consul: none(),
		netMod: cs(">= 1.0.0", "modules/sibling/main.tf.json:1", "", "modules/sibling/main.tf.json:1"), // dyn: any version
	}
	if diff := cmp.Diff(want, byModule(got)); diff != "" {
		t.Errorf("ModuleCalls(pkg, \"\") (-want +got):\n%s", diff)
	}

	// A subdirectory whose local calls go above it, inside the package.
	got, _, err = ModuleCalls(pkg, "modules/sub")
	if err != nil {
		t.Fatalf("ModuleCalls(modules/sub): %v", err)
	}
	want = map[string][]Constraint{consul: none(), netMod: cs(">= 1.0.0", "modules/sibling/main.tf.json:1", "", "modules/sibling/main.tf.json:1")}
	if diff := cmp.Diff(want, byModule(got)); diff != "" {
		t.Errorf("ModuleCalls(pkg, modules/sub) (-want +got):\n%s", diff)
	}
}

func TestModuleCallsEscapes(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pkg/main.tf":         `module "up" { source = "../outside" }`,
		"pkg/deep/main.tf":    `module "up" { source = "..\\..\\outside" }`,
		"pkg/linked/main.tf":  `module "l" { source = "./out" }`,
		"pkg/ok/main.tf":      `module "v" { source = "terraform-aws-modules/vpc/aws" }`,
		"pkg/badfile/main.tf": `module "v" { source = "terraform-aws-modules/vpc/aws" }`,
		"outside/main.tf":     `module "x" { source = "hashicorp/consul/aws" }`,
	})
	pkg := filepath.Join(dir, "pkg")
	for _, link := range []struct{ target, name string }{
		{filepath.Join(dir, "outside"), filepath.Join(pkg, "linked", "out")},
		{filepath.Join(dir, "outside"), filepath.Join(pkg, "outlink")},
		{filepath.Join(dir, "outside", "main.tf"), filepath.Join(pkg, "badfile", "evil.tf")},
	} {
		if err := os.Symlink(link.target, link.name); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	for _, tt := range []struct{ subdir, want string }{
		{"", `main.tf:1:1: Local module path escapes module package: The source "../outside" of module.up leads to ../outside, outside the module package.`},
		{"deep", `deep/main.tf:1:1: Local module path escapes module package: The source "..\\..\\outside" of module.up leads to ../outside, outside the module package.`},
		{"linked", `linked/main.tf:1:1: Local module path escapes module package: The source "./out" of module.l leads to linked/out, outside the module package.`},
		{"badfile", `badfile/evil.tf: Configuration file outside its package: The configuration file badfile/evil.tf is a link that leads out of the module package.`},
		{"../outside", `../outside: Module directory outside its package: The subdirectory "../outside" is not inside the module package.`},
		{"/etc", `/etc: Module directory outside its package`},
		{"outlink", `outlink: Module directory outside its package: The subdirectory "outlink" leads out of the module package through a symbolic link.`},
		{"missing", `missing: Failed to read module directory: Module directory missing does not exist or cannot be read: no such file or directory.`},
	} {
		got, _, err := ModuleCalls(pkg, tt.subdir)
		var lerr *Error
		if !errors.As(err, &lerr) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ModuleCalls(pkg, %q) = %v, %v; want an *Error containing %q", tt.subdir, byModule(got), err, tt.want)
		}
	}
	if _, _, err := ModuleCalls(filepath.Join(dir, "nope"), ""); err == nil {
		t.Error("ModuleCalls of a missing package: no error")
	}
	got, _, err := ModuleCalls(pkg, "ok")
	if err != nil || len(got) != 1 {
		t.Errorf("ModuleCalls(pkg, ok) = %v, %v", byModule(got), err)
	}
}

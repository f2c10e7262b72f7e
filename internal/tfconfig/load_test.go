package tfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeTree creates files (slash-separated paths relative to a new
// temporary directory) and returns the directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// byAddress keys the result by the providers' string form.
func byAddress(r *Root) map[string][]Constraint {
	out := map[string][]Constraint{}
	for p, cs := range r.Providers {
		if cs == nil {
			cs = []Constraint{{Text: "BUG: nil slice"}}
		}
		out[p.String()] = cs
	}
	return out
}

const (
	foo  = "registry.opentofu.org/hashicorp/foo"
	bar  = "registry.opentofu.org/hashicorp/bar"
	baz  = "registry.opentofu.org/hashicorp/baz"
	aws  = "registry.opentofu.org/hashicorp/aws"
	qux  = "registry.test/acme/qux"
	acme = "registry.opentofu.org/acme/cloud"
)

func none() []Constraint { return []Constraint{} }

func cs(textPos ...string) []Constraint {
	var out []Constraint
	for i := 0; i < len(textPos); i += 2 {
		out = append(out, Constraint{Text: textPos[i], Pos: textPos[i+1]})
	}
	return out
}

type loadTest struct {
	name  string
	files map[string]string
	// root is the directory to load, relative to the tree; "root" if empty.
	root         string
	want         map[string][]Constraint
	wantWarnings []string
	// wantErr lists strings that must each appear in the error message.
	wantErr []string
}

func runLoadTests(t *testing.T, tests []loadTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, tt.files)
			root := tt.root
			if root == "" {
				root = "root"
			}
			r, err := Load(from(t, dir, root))
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Load: no error, want one containing %q; providers %v", tt.wantErr, byAddress(r))
				}
				var lerr *Error
				if !errors.As(err, &lerr) {
					t.Fatalf("Load error is %T, want *Error: %v", err, err)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Load error:\n%v\nwant it to contain %q", err, want)
					}
				}
				if r != nil {
					t.Errorf("Load returned a Root with an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if r.Dir != root {
				t.Errorf("Dir = %q, want %q", r.Dir, root)
			}
			if diff := cmp.Diff(tt.want, byAddress(r)); diff != "" {
				t.Errorf("providers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, r.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadRequiredProviders(t *testing.T) {
	runLoadTests(t, []loadTest{
		{
			name: "object form",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
    qux = {
      source = "registry.test/acme/qux"
    }
  }
}
`},
			want: map[string][]Constraint{aws: cs("~> 5.0", "root/main.tf:6"), qux: none()},
		},
		{
			name: "legacy string form implies hashicorp",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = "~> 1.0"
  }
}
`},
			want: map[string][]Constraint{foo: cs("~> 1.0", "root/main.tf:4")},
		},
		{
			name: "source omitted implies hashicorp",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = { version = ">= 1.1.0" }
    bar = {}
  }
}
`},
			want: map[string][]Constraint{foo: cs(">= 1.1.0", "root/main.tf:4"), bar: none()},
		},
		{
			name: "one-part and full sources",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    a = { source = "foo" }
    b = { source = "Registry.OpenTofu.org/HashiCorp/Bar" }
  }
}
`},
			want: map[string][]Constraint{foo: none(), bar: none()},
		},
		{
			name: "built-in terraform provider is not a requirement",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    terraform = { source = "terraform.io/builtin/terraform" }
    foo       = { source = "hashicorp/foo" }
  }
}
resource "terraform_data" "x" {}
data "terraform_remote_state" "y" {}
`},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "terraform local name without source is built in",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    terraform = "1.0"
  }
}
resource "terraform_data" "x" {}
`},
			want: map[string][]Constraint{},
		},
		{
			name: "several terraform blocks combine",
			files: map[string]string{
				"root/backend.tf": `
terraform {
  backend "local" {}
  required_version = ">= 1.6"
}
`,
				"root/versions.tf": `
terraform {
  required_providers {
    foo = { source = "hashicorp/foo", version = "~> 1.0" }
  }
}
terraform {
  experiments = []
}
`,
			},
			want: map[string][]Constraint{foo: cs("~> 1.0", "root/versions.tf:4")},
		},
		{
			name: "number version converts to a string",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = 1
  }
}
`},
			want: map[string][]Constraint{foo: cs("1", "root/main.tf:4")},
		},
		{
			name: "configuration_aliases",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = {
      source                = "hashicorp/foo"
      configuration_aliases = [foo.east, foo.west]
    }
  }
}
resource "foo_thing" "a" {
  provider = foo.east
}
`},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "unused required provider is still required",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    baz = { source = "hashicorp/baz", version = "3.0.0" }
  }
}
`},
			want: map[string][]Constraint{baz: cs("3.0.0", "root/main.tf:4")},
		},
	})
}

func TestLoadImpliedProviders(t *testing.T) {
	runLoadTests(t, []loadTest{
		{
			name: "resources data ephemeral and provider blocks",
			files: map[string]string{"root/main.tf": `
resource "foo_thing" "a" {}
data "bar_thing" "b" {}
ephemeral "baz_secret" "c" {}
provider "aws" {
  region = "eu-west-1"
}
resource "qux" "no_underscore" {}
`},
			want: map[string][]Constraint{
				foo: none(), bar: none(), baz: none(), aws: none(),
				"registry.opentofu.org/hashicorp/qux": none(),
			},
		},
		{
			name: "local name mapping",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    mycloud = { source = "acme/cloud" }
  }
}
resource "mycloud_x" "a" {}
data "mycloud_y" "b" {}
provider "mycloud" {}
`},
			want: map[string][]Constraint{acme: none()},
		},
		{
			name: "provider meta-argument with alias",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    mycloud = { source = "acme/cloud" }
  }
}
provider "mycloud" {
  alias = "west"
}
resource "aws_instance" "a" {
  provider = mycloud.west
}
data "google_thing" "b" {
  provider = foo
}
resource "bar_thing" "c" {
  for_each = toset(["x"])
  provider = baz.regional[each.key]
}
resource "qux_thing" "d" {
  provider = "mycloud.west"
}
`},
			want:         map[string][]Constraint{acme: none(), foo: none(), baz: none()},
			wantWarnings: nil,
		},
		{
			name: "check block data source",
			files: map[string]string{"root/main.tf": `
check "health" {
  data "bar_http" "probe" {}
  assert {
    condition     = data.bar_http.probe.id != ""
    error_message = "never"
  }
}
`},
			want: map[string][]Constraint{bar: none()},
		},
		{
			name: "import blocks",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    mycloud = { source = "acme/cloud" }
  }
}
import {
  to       = foo_thing.a
  id       = "a"
  provider = mycloud
}
import {
  to = bar_thing.b
  id = "b"
}
import {
  to = module.child["x"].baz_thing.c[0]
  id = "c"
}
`},
			// The import with a provider argument still implies nothing
			// for foo: its provider is mycloud.
			want: map[string][]Constraint{acme: none(), bar: none(), baz: none()},
		},
		{
			name: "provider block version counts as a constraint",
			files: map[string]string{"root/main.tf": `
provider "foo" {
  version = "< 1.2.0"
}
provider "foo" {
  alias   = "b"
  version = ">= 1.0"
}
`},
			want: map[string][]Constraint{foo: cs("< 1.2.0", "root/main.tf:3", ">= 1.0", "root/main.tf:7")},
			wantWarnings: []string{
				"root/main.tf:3:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers.",
				"root/main.tf:7:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers.",
			},
		},
		{
			name: "child module implied providers",
			files: map[string]string{
				"root/main.tf":       `module "child" { source = "./child" }`,
				"root/child/main.tf": `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{bar: none()},
		},
		{
			name: "child module local names are its own",
			files: map[string]string{
				"root/main.tf": `
terraform {
  required_providers {
    mycloud = { source = "acme/cloud" }
  }
}
module "child" { source = "./child" }
`,
				// In the child, mycloud is not declared: hashicorp/mycloud.
				"root/child/main.tf": `resource "mycloud_x" "a" {}`,
			},
			want: map[string][]Constraint{acme: none(), "registry.opentofu.org/hashicorp/mycloud": none()},
		},
		{
			name: "invalid resource type implies nothing",
			files: map[string]string{"root/main.tf": `
resource "-bad_thing" "a" {}
`},
			want: map[string][]Constraint{},
		},
	})
}

func TestLoadFiles(t *testing.T) {
	runLoadTests(t, []loadTest{
		{
			name: "tofu file replaces tf file of the same name",
			files: map[string]string{
				"root/versions.tf": `terraform {
  required_providers {
    foo = { version = "~> 1.0" }
  }
}`,
				"root/versions.tofu": `terraform {
  required_providers {
    foo = { version = "~> 2.0" }
  }
}`,
				"root/main.tf": `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: cs("~> 2.0", "root/versions.tofu:3"), bar: none()},
		},
		{
			name: "tofu.json replaces tf.json but not tf",
			files: map[string]string{
				"root/a.tf.json":   `{"resource": {"foo_thing": {"x": {}}}}`,
				"root/a.tofu.json": `{"resource": {"bar_thing": {"x": {}}}}`,
				"root/a.tf":        `resource "baz_thing" "x" {}`,
			},
			want: map[string][]Constraint{bar: none(), baz: none()},
		},
		{
			name: "override.tofu replaces override.tf",
			files: map[string]string{
				"root/main.tf": `terraform {
  required_providers {
    foo = { version = "~> 1.0" }
  }
}`,
				"root/override.tf": `terraform {
  required_providers {
    foo = { version = "~> 2.0" }
  }
}`,
				"root/override.tofu": `terraform {
  required_providers {
    foo = { version = "~> 3.0" }
  }
}`,
			},
			want: map[string][]Constraint{foo: cs("~> 3.0", "root/override.tofu:3")},
		},
		{
			name: "hidden and backup files are ignored",
			files: map[string]string{
				"root/main.tf":          `resource "foo_thing" "a" {}`,
				"root/.hidden.tf":       `this is { not valid`,
				"root/main.tf~":         `this is { not valid`,
				"root/#main.tf#":        `this is { not valid`,
				"root/notes.txt":        `this is { not valid`,
				"root/main.tftest.hcl~": `run "x" { this is { not valid`,
				"root/sub/main.tf":      `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "JSON array forms",
			files: map[string]string{"root/main.tf.json": `{
  "terraform": [{"required_providers": [{"aws": {"source": "hashicorp/aws", "version": "~> 5.0"}, "foo": "~> 1.0"}]}],
  "resource": {"mycloud_x": {"a": {"provider": "aws.west"}}},
  "data": [{"bar_thing": [{"b": [{}]}]}]
}`},
			want: map[string][]Constraint{
				aws: cs("~> 5.0", "root/main.tf.json:2"),
				foo: cs("~> 1.0", "root/main.tf.json:2"),
				bar: none(),
			},
		},
		{
			name: "JSON object forms",
			files: map[string]string{"root/main.tf.json": `{
  "//": "comment",
  "terraform": {
    "required_providers": {
      "//": "comment",
      "mycloud": {
        "source": "acme/cloud",
        "version": ">= 2.0.0"
      }
    }
  },
  "provider": {"mycloud": {"alias": "x"}},
  "module": {"child": {"source": "./child"}},
  "resource": {"mycloud_x": {"a": {}}},
  "import": {"to": "bar_thing.b", "id": "b"}
}`,
				"root/child/main.tofu.json": `{"ephemeral": {"baz_secret": {"s": {}}}}`,
			},
			want: map[string][]Constraint{acme: cs(">= 2.0.0", "root/main.tf.json:8"), bar: none(), baz: none()},
		},
		{
			name: "override file replaces a required_providers entry",
			files: map[string]string{
				"root/main.tf": `
terraform {
  required_providers {
    qux = {
      source  = "registry.test/acme/qux"
      version = "~> 1.0"
    }
    foo = {
      source  = "hashicorp/foo"
      version = ">= 1.0"
    }
  }
}
resource "qux_thing" "a" {}
`,
				"root/override.tf": `
terraform {
  required_providers {
    qux = {
      source = "registry.test/acme/qux"
    }
  }
}
`,
				"root/x_override.tf.json": `{"terraform": {"required_providers": {"foo": {"version": "< 1.5.0"}}}}`,
			},
			// The replaced entries' constraints are gone, and the
			// replacement for qux has none.
			want: map[string][]Constraint{qux: none(), foo: cs("< 1.5.0", "root/x_override.tf.json:1")},
		},
		{
			name: "override entry can change the source of a local name",
			files: map[string]string{
				"root/main.tf": `
terraform {
  required_providers {
    cloud = { source = "hashicorp/foo", version = "~> 1.0" }
  }
}
resource "cloud_thing" "a" {}
`,
				"root/main_override.tf": `
terraform {
  required_providers {
    cloud = { source = "acme/cloud" }
  }
}
`,
			},
			want: map[string][]Constraint{acme: none()},
		},
		{
			name: "override provider block and resource provider",
			files: map[string]string{
				"root/main.tf": `
provider "foo" {
  version = "~> 1.0"
}
resource "bar_thing" "a" {}
`,
				"root/override.tf": `
provider "foo" {
  version = "~> 1.2"
}
resource "bar_thing" "a" {
  provider = baz
}
`,
			},
			want: map[string][]Constraint{foo: cs("~> 1.2", "root/override.tf:3"), baz: none()},
			wantWarnings: []string{
				"root/main.tf:3:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers.",
				"root/override.tf:3:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers.",
			},
		},
		{
			name: "override module source",
			files: map[string]string{
				"root/main.tf":       `module "m" { source = "./a" }`,
				"root/override.tf":   `module "m" { source = "./b" }`,
				"root/a/main.tf":     `resource "foo_thing" "x" {}`,
				"root/b/main.tf":     `resource "bar_thing" "x" {}`,
				"root/c_override.tf": `module "m" { count = 2 }`,
			},
			want: map[string][]Constraint{bar: none()},
		},
		{
			name: "constraint order is module path then file then position",
			files: map[string]string{
				"root/b.tf": `
provider "foo" {
  version = "< 3.0"
}
module "z" { source = "../z" }
module "a" { source = "../a" }
`,
				"root/a.tf": `
terraform {
  required_providers {
    foo = { version = ">= 1.0" }
  }
}
`,
				"a/main.tf": `
terraform {
  required_providers {
    foo = { version = "!= 1.5.0" }
  }
}
module "deeper" { source = "./deeper" }
`,
				"a/deeper/main.tf": `terraform {
  required_providers {
    foo = ">= 1.1"
  }
}`,
				"z/main.tf": `terraform {
  required_providers {
    foo = "~> 1.0"
  }
}`,
			},
			want: map[string][]Constraint{foo: cs(
				">= 1.0", "root/a.tf:4",
				"< 3.0", "root/b.tf:3",
				"!= 1.5.0", "a/main.tf:4",
				">= 1.1", "a/deeper/main.tf:3",
				"~> 1.0", "z/main.tf:3",
			)},
			wantWarnings: []string{
				"root/b.tf:3:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers.",
			},
		},
		{
			// A wrong directory, not a configuration that needs nothing.
			name:    "empty directory",
			files:   map[string]string{"root/README.md": "nothing here"},
			wantErr: []string{"root: No configuration files: It holds no OpenTofu or Terraform configuration files (*.tf, *.tf.json, *.tofu, *.tofu.json)"},
		},
	})
}

func TestLoadModules(t *testing.T) {
	const manifest = `{"Modules":[
  {"Key":"","Source":"","Dir":"."},
  {"Key":"net","Source":"registry.terraform.io/x/y/aws","Version":"1.0.0","Dir":".terraform/modules/net"},
  {"Key":"net.sub","Source":"./sub","Dir":".terraform/modules/net/sub"}
]}`
	runLoadTests(t, []loadTest{
		{
			name: "nested local modules",
			files: map[string]string{
				"root/main.tf": `
module "network" {
  source = "../modules/network"
}
`,
				"modules/network/main.tf": `
terraform {
  required_providers {
    foo = { source = "hashicorp/foo", version = ">= 1.1.0" }
  }
}
module "subnets" {
  source   = "./subnets"
  for_each = toset(["a", "b"])
}
`,
				"modules/network/subnets/main.tf": `resource "bar_subnet" "this" {}`,
			},
			want: map[string][]Constraint{foo: cs(">= 1.1.0", "modules/network/main.tf:4"), bar: none()},
		},
		{
			name: "same module called twice counts its constraints once",
			files: map[string]string{
				"root/main.tf": `
module "a" { source = "./m" }
module "b" { source = "./m/" }
module "c" { source = ".\\m" }
`,
				"root/m/main.tf": `terraform {
  required_providers {
    foo = "~> 1.0"
  }
}`,
			},
			want: map[string][]Constraint{foo: cs("~> 1.0", "root/m/main.tf:3")},
		},
		{
			name: "installed remote module",
			files: map[string]string{
				"root/main.tf": `
module "net" {
  source  = "registry.terraform.io/x/y/aws"
  version = "~> 1.0"
}
`,
				"root/.terraform/modules/modules.json": manifest,
				"root/.terraform/modules/net/main.tf": `
terraform {
  required_providers {
    qux = { source = "registry.test/acme/qux", version = "~> 1.0" }
  }
}
resource "qux_thing" "a" {}
module "sub" { source = "./sub" }
`,
				"root/.terraform/modules/net/sub/main.tf": `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{qux: cs("~> 1.0", "root/.terraform/modules/net/main.tf:4"), bar: none()},
		},
		{
			name: "installed registry module, the host left out",
			files: map[string]string{
				"root/main.tf": `module "net" {
  source  = "x/y/aws"
  version = "1.0.0"
}`,
				"root/.terraform/modules/modules.json": `{"Modules":[{"Key":"net","Source":"registry.opentofu.org/x/y/aws","Version":"1.0.0","Dir":".terraform/modules/net"}]}`,
				"root/.terraform/modules/net/main.tf":  `resource "foo_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "installed registry module, by Terraform",
			files: map[string]string{
				"root/main.tf": `module "net" {
  source  = "x/y/aws"
  version = "1.0.0"
}`,
				"root/.terraform/modules/modules.json": `{"Modules":[{"Key":"net","Source":"registry.terraform.io/x/y/aws","Version":"1.0.0","Dir":".terraform/modules/net"}]}`,
				"root/.terraform/modules/net/main.tf":  `resource "foo_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "installed module whose call changed since",
			files: map[string]string{
				"root/main.tf": `module "net" {
  source = "git::https://example.com/net.git//m?ref=v2"
}
module "reg" {
  source  = "registry.terraform.io/x/y/aws"
  version = "~> 2.0"
}
module "unversioned" {
  source  = "git::https://example.com/u.git//./m?ref=v1"
  version = "1.0.0"
}
module "same" {
  source = "git::https://example.com/s.git//./m/../n?ref=v1"
}
`,
				"root/.terraform/modules/modules.json": `{"Modules":[
  {"Key":"net","Source":"git::https://example.com/net.git//m?ref=v1","Dir":".terraform/modules/net/m"},
  {"Key":"reg","Source":"registry.terraform.io/x/y/aws","Version":"1.0.0","Dir":".terraform/modules/reg"},
  {"Key":"unversioned","Source":"git::https://example.com/u.git//m?ref=v1","Dir":".terraform/modules/unversioned/m"},
  {"Key":"same","Source":"git::https://example.com/s.git//n?ref=v1","Dir":".terraform/modules/same/n"}
]}`,
				"root/.terraform/modules/net/m/main.tf":         `resource "qux_thing" "a" {}`,
				"root/.terraform/modules/reg/main.tf":           `resource "qux_thing" "a" {}`,
				"root/.terraform/modules/unversioned/m/main.tf": `resource "qux_thing" "a" {}`,
				"root/.terraform/modules/same/n/main.tf":        `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{bar: none()},
			wantWarnings: []string{
				`module.net (git::https://example.com/net.git//m?ref=v2) in root/main.tf:1: its source has changed since "tofu init" installed it from "git::https://example.com/net.git//m?ref=v1"; run "tofu init" to include its providers`,
				`module.reg (registry.terraform.io/x/y/aws) in root/main.tf:4: it asks for "~> 2.0", but "tofu init" installed version 1.0.0; run "tofu init" to include its providers`,
				`module.unversioned (git::https://example.com/u.git//./m?ref=v1) in root/main.tf:8: it has a version constraint, but "tofu init" installed it without a version; run "tofu init" to include its providers`,
			},
		},
		{
			name: "remote module not installed",
			files: map[string]string{
				"root/main.tf": `
resource "foo_thing" "a" {}



module "network" {
  source = "registry.terraform.io/x/y/aws"
}
`,
			},
			want: map[string][]Constraint{foo: none()},
			wantWarnings: []string{
				`module.network (registry.terraform.io/x/y/aws) in root/main.tf:6 is not installed under .terraform/modules; run "tofu init" to include its providers`,
			},
		},
		{
			name: "remote module in manifest but directory missing",
			files: map[string]string{
				"root/main.tf":                         `module "net" { source = "registry.terraform.io/x/y/aws" }`,
				"root/.terraform/modules/modules.json": manifest,
			},
			want: map[string][]Constraint{},
			wantWarnings: []string{
				`module.net (registry.terraform.io/x/y/aws) in root/main.tf:1 is recorded in .terraform/modules/modules.json, but its directory root/.terraform/modules/net cannot be read; run "tofu init" to include its providers`,
			},
		},
		{
			name: "local call in an installed module prefers the manifest",
			files: map[string]string{
				"root/main.tf": `module "net" { source = "git::https://example.com/net.git" }`,
				"root/.terraform/modules/modules.json": `{"Modules":[
  {"Key":"net","Source":"git::https://example.com/net.git","Dir":".terraform/modules/net"},
  {"Key":"net.sub","Source":"./sub","Dir":".terraform/modules/elsewhere"}
]}`,
				"root/.terraform/modules/net/main.tf":       `module "sub" { source = "./sub" }`,
				"root/.terraform/modules/net/sub/main.tf":   `resource "foo_thing" "a" {}`,
				"root/.terraform/modules/elsewhere/main.tf": `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{bar: none()},
		},
		{
			name: "local call in an installed module without a manifest entry",
			files: map[string]string{
				"root/main.tf": `module "net" { source = "git::https://example.com/net.git" }`,
				"root/.terraform/modules/modules.json": `{"Modules":[
  {"Key":"net","Source":"git::https://example.com/net.git","Dir":".terraform/modules/net"}
]}`,
				"root/.terraform/modules/net/main.tf":     `module "sub" { source = "./sub" }`,
				"root/.terraform/modules/net/sub/main.tf": `resource "foo_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "local call in the root package ignores the manifest",
			files: map[string]string{
				"root/main.tf": `module "a" { source = "./a" }`,
				"root/.terraform/modules/modules.json": `{"Modules":[
  {"Key":"a","Source":"./a","Dir":"stale"}
]}`,
				"root/a/main.tf":     `resource "foo_thing" "a" {}`,
				"root/stale/main.tf": `resource "bar_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: none()},
		},
		{
			name: "source from a variable followed through the manifest",
			files: map[string]string{
				"root/main.tf": `
variable "ref" {
  type    = string
  default = "v1"
}
module "net" {
  source = "git::https://example.com/net.git?ref=${var.ref}"
}
module "other" {
  source = "git::https://example.com/other.git?ref=${var.ref}"
}
`,
				"root/.terraform/modules/modules.json": `{"Modules":[
  {"Key":"net","Source":"git::https://example.com/net.git?ref=v1","Dir":".terraform/modules/net"}
]}`,
				"root/.terraform/modules/net/main.tf": `resource "foo_thing" "a" {}`,
			},
			want: map[string][]Constraint{foo: none()},
			wantWarnings: []string{
				`module.other (git::https://example.com/other.git?ref=v1) in root/main.tf:9 is not installed under .terraform/modules; run "tofu init" to include its providers`,
			},
		},
		{
			name: "nested remote module not installed",
			files: map[string]string{
				"root/main.tf":   `module "a" { source = "./a" }`,
				"root/a/main.tf": `module "b" { source = "hashicorp/consul/aws" }`,
			},
			want: map[string][]Constraint{},
			wantWarnings: []string{
				`module.a.module.b (hashicorp/consul/aws) in root/a/main.tf:1 is not installed under .terraform/modules; run "tofu init" to include its providers`,
			},
		},
	})
}

func TestLoadErrors(t *testing.T) {
	runLoadTests(t, []loadTest{
		{
			name: "provider of another type passed to a module",
			files: map[string]string{
				"root/main.tf": `terraform {
  required_providers {
    myp = { source = "acme/cloud" }
  }
}
module "c" {
  source    = "./c"
  providers = { foo = myp }
}`,
				"root/c/main.tf": `resource "foo_thing" "a" {}`,
			},
			wantErr: []string{`root/main.tf:8:17: Provider type mismatch: The local name "myp" in the root module represents provider "acme/cloud", but "foo" in module.c represents "hashicorp/foo"`},
		},
		{
			name:    "syntax error",
			files:   map[string]string{"root/main.tf": "resource \"foo_thing\" \"a\" {\n  x = \n}\n"},
			wantErr: []string{"root/main.tf:2:7: Invalid expression"},
		},
		{
			name:    "JSON syntax error",
			files:   map[string]string{"root/main.tf.json": "{\n  \"resource\": [\n}"},
			wantErr: []string{"root/main.tf.json:3:1: "},
		},
		{
			name: "syntax error in a child module",
			files: map[string]string{
				"root/main.tf":   `module "a" { source = "./a" }`,
				"root/a/main.tf": "\n\nterraform {",
			},
			wantErr: []string{"root/a/main.tf:3:11: Unclosed configuration block"},
		},
		{
			name: "unknown key in a requirement",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = {
      source = "hashicorp/foo"
      region = "x"
    }
  }
}
`},
			wantErr: []string{`root/main.tf:6:7: Invalid required_providers object: required_providers objects can only contain "version", "source" and "configuration_aliases" attributes.`},
		},
		{
			name: "invalid source address",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = { source = "hashicorp/terraform-provider-foo" }
    bar = { source = "a/b/c/d" }
    baz = { source = "-/baz" }
  }
}
`},
			wantErr: []string{"root/main.tf:4:22: ", "terraform-provider-", "root/main.tf:5:22: ", "root/main.tf:6:22: ", "namespace"},
		},
		{
			name: "source must be a string",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = { source = 42 }
  }
}
`},
			wantErr: []string{"root/main.tf:4:22: Invalid source: Source must be specified as a string."},
		},
		{
			name: "invalid constraints for go-version",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = { version = "" }
    bar = { version = "garbage" }
    baz = "=> 1.0"
  }
}
`},
			wantErr: []string{
				`root/main.tf:4:23: Invalid version constraint: "" does not use correct version constraint syntax.`,
				`root/main.tf:5:23: Invalid version constraint: "garbage" does not use correct version constraint syntax.`,
				`root/main.tf:6:11: Invalid version constraint: "=> 1.0" does not use correct version constraint syntax.`,
			},
		},
		{
			name: "invalid constraint for the selection parser only",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = { version = "v1.0.0" }
  }
}
provider "bar" {
  version = "v2.0.0"
}
`},
			wantErr: []string{
				`root/main.tf:4:23: Invalid version constraint: Incorrect version constraint syntax: invalid version constraint "v1.0.0"`,
				`root/main.tf:8:13: Invalid version constraint: Incorrect version constraint syntax: invalid version constraint "v2.0.0"`,
			},
		},
		{
			name: "version must be a string",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = { version = ["1.0"] }
  }
}
`},
			wantErr: []string{"root/main.tf:4:23: Invalid version constraint: Version must be specified as a string."},
		},
		{
			name: "requirement must be a string or an object",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = ["hashicorp/foo"]
  }
}
`},
			wantErr: []string{"root/main.tf:4:11: Invalid required_providers object: required_providers entries must be strings or objects."},
		},
		{
			name: "two required_providers blocks",
			files: map[string]string{
				"root/a.tf": `terraform {
  required_providers {
    foo = "~> 1.0"
  }
}`,
				"root/b.tf": `
terraform {
  required_providers {
    bar = "~> 1.0"
  }
}
`,
			},
			wantErr: []string{"root/b.tf:3:3: Duplicate required providers configuration: A module may have only one required providers configuration."},
		},
		{
			name:    "required_providers outside terraform",
			files:   map[string]string{"root/main.tf": `required_providers { foo = "1.0" }`},
			wantErr: []string{`root/main.tf:1:1: Invalid required_providers block`},
		},
		{
			name: "bad configuration_aliases",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    foo = {
      configuration_aliases = [bar.east, foo, foo.west.x, "foo.ok"]
    }
  }
}
`},
			wantErr: []string{
				`root/main.tf:5:32: Invalid configuration_aliases value: Configuration aliases must be prefixed with the provider name. Expected "foo", but found "bar".`,
				`root/main.tf:5:42: Invalid configuration_aliases value`,
				`root/main.tf:5:47: Invalid configuration_aliases value`,
				`root/main.tf:5:59: `,
			},
		},
		{
			name: "local names must be normalized",
			files: map[string]string{"root/main.tf": `
terraform {
  required_providers {
    Foo = { source = "hashicorp/foo" }
  }
}
provider "BAR" {}
resource "baz_thing" "a" {
  provider = Baz
}
`},
			wantErr: []string{
				`root/main.tf:4:11: Invalid provider local name: Provider names must be normalized. Replace "Foo" with "foo" to fix this error.`,
				`root/main.tf:7:1: Invalid provider local name`,
				`root/main.tf:9:14: Invalid provider local name`,
			},
		},
		{
			name: "invalid provider reference",
			files: map[string]string{"root/main.tf": `
resource "baz_thing" "a" {
  provider = baz.a.b.c
}
`},
			wantErr: []string{`root/main.tf:3:14: Invalid provider configuration reference`},
		},
		{
			name: "implied provider that cannot be installed",
			files: map[string]string{"root/main.tf": `
resource "terraform-foo_thing" "a" {}
`},
			wantErr: []string{`root/main.tf:2:1: Invalid provider: The local provider name "terraform-foo" implies a provider that cannot be installed`},
		},
		{
			name:    "module without source",
			files:   map[string]string{"root/main.tf": "module \"a\" {\n}\n"},
			wantErr: []string{`root/main.tf:1:12: Missing required argument: The argument "source" is required`},
		},
		{
			name: "unreadable local module directory",
			files: map[string]string{"root/main.tf": `
module "gone" {
  source = "./does-not-exist"
}
`},
			wantErr: []string{`root/main.tf:2:1: Unreadable module directory: The directory root/does-not-exist for module.gone could not be read: no such file or directory.`},
		},
		{
			name: "local module source is a file",
			files: map[string]string{
				"root/main.tf":  `module "f" { source = "./file.txt" }`,
				"root/file.txt": "x",
			},
			wantErr: []string{`root/main.tf:1:1: Unreadable module directory: The directory root/file.txt for module.f could not be read: not a directory.`},
		},
		{
			name:    "module calling itself",
			files:   map[string]string{"root/main.tf": `module "self" { source = "./" }`},
			wantErr: []string{`root/main.tf:1:1: Module call cycle: module.self calls ./ (root), which is already being read as the root module.`},
		},
		{
			name: "module call cycle",
			files: map[string]string{
				"root/main.tf": `module "a" { source = "../a" }`,
				"a/main.tf":    `module "b" { source = "../b" }`,
				"b/main.tf":    "\nmodule \"back\" {\n  source = \"../a\"\n}\n",
			},
			wantErr: []string{`b/main.tf:2:1: Module call cycle: module.a.module.b.module.back calls ../a (a), which is already being read as module.a.`},
		},
		{
			name: "override without base",
			files: map[string]string{
				"root/main.tf": `resource "foo_thing" "a" {}`,
				"root/override.tf": `
resource "foo_thing" "b" {}
module "m" { source = "./m" }
provider "foo" {
  alias = "x"
}
import {
  to = foo_thing.a
  id = "a"
}
`,
			},
			wantErr: []string{
				`root/override.tf:2:1: Missing resource block to override`,
				`root/override.tf:3:1: Missing module call to override`,
				`root/override.tf:4:1: Missing base provider configuration for override`,
				`root/override.tf:7:1: Cannot override 'import' blocks`,
			},
		},
		{
			name: "duplicate provider configurations and module calls",
			files: map[string]string{"root/main.tf": `
provider "foo" {}
provider "foo" {}
module "m" { source = "./m" }
module "m" { source = "./m" }
`, "root/m/main.tf": ""},
			wantErr: []string{
				`root/main.tf:3:1: Duplicate provider configuration`,
				`root/main.tf:5:1: Duplicate module call`,
			},
		},
		{
			name: "invalid manifest",
			files: map[string]string{
				"root/main.tf":                         `module "net" { source = "x/y/z" }`,
				"root/.terraform/modules/modules.json": `{"Modules": [`,
			},
			wantErr: []string{`root/.terraform/modules/modules.json: Failed to read modules manifest file: invalid JSON`},
		},
		{
			name:    "root directory missing",
			files:   map[string]string{"other/main.tf": ""},
			wantErr: []string{`root: Failed to read module directory: Module directory `, `does not exist or cannot be read`},
		},
		{
			name: "all problems are reported",
			files: map[string]string{
				"root/a.tf": `terraform {
  required_providers {
    foo = { version = "nope"
  }
} }`,
				"root/b.tf": `resource "x" {`,
			},
			wantErr: []string{"root/a.tf:3:23: Invalid version constraint", "root/b.tf:1:14: "},
		},
	})
}

func TestLoadErrorFormat(t *testing.T) {
	dir := writeTree(t, map[string]string{"root/main.tf": "\nterraform {\n  required_providers {\n    foo = { version = \"v1\" }\n  }\n}\n"})
	_, err := Load(from(t, dir, "root"))
	var lerr *Error
	if !errors.As(err, &lerr) {
		t.Fatalf("Load error = %v (%T), want *Error", err, err)
	}
	want := []Problem{{
		File:    "root/main.tf",
		Line:    4,
		Column:  23,
		Summary: "Invalid version constraint",
		Detail:  `Incorrect version constraint syntax: invalid version constraint "v1": invalid specification "v1": a "v" prefix should not be used when specifying versions.`,
	}}
	if diff := cmp.Diff(want, lerr.Problems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if got, wantMsg := err.Error(), `root/main.tf:4:23: Invalid version constraint: Incorrect version constraint syntax: invalid version constraint "v1": invalid specification "v1": a "v" prefix should not be used when specifying versions.`; got != wantMsg {
		t.Errorf("Error() = %q\nwant      %q", got, wantMsg)
	}
}

func TestLoadSymlinkCycle(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf":   `module "a" { source = "./a" }`,
		"root/a/main.tf": `module "up" { source = "./link" }`,
	})
	if err := os.Symlink("..", filepath.Join(dir, "root", "a", "link")); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
	_, err := Load(from(t, dir, "root"))
	if err == nil || !strings.Contains(err.Error(), "Module call cycle: module.a.module.up calls ./link (root/a/link), which is already being read as the root module.") {
		t.Errorf("Load error = %v, want a module call cycle", err)
	}
}

func TestLoadDeterministic(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf": `
terraform {
  required_providers {
    foo = "~> 1.0"
    bar = ">= 0.1"
    baz = "3.0.0"
  }
}
module "x" { source = "./x" }
module "y" { source = "./x" }
module "r1" { source = "a/b/c" }
module "r2" { source = "a/b/d" }
`,
		"root/x/main.tf": `terraform {
  required_providers {
    foo = "< 2.0"
  }
}`,
	})
	first, err := Load(from(t, dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := Load(from(t, dir, "root"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(byAddress(first), byAddress(again)); diff != "" {
			t.Fatalf("second Load differs (-first +again):\n%s", diff)
		}
		if diff := cmp.Diff(first.Warnings, again.Warnings); diff != "" {
			t.Fatalf("second Load warnings differ (-first +again):\n%s", diff)
		}
	}
}

func TestLoadRelativeRoot(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf": "terraform {\n  required_providers {\n    foo = \"~> 1.0\"\n  }\n}\n",
	})
	t.Chdir(filepath.Join(dir, "root"))
	r, err := Load(".")
	if err != nil {
		t.Fatal(err)
	}
	if r.Dir != "." {
		t.Errorf("Dir = %q, want %q", r.Dir, ".")
	}
	// Positions read as from the directory the command runs in.
	want := map[string][]Constraint{foo: cs("~> 1.0", "main.tf:3")}
	if diff := cmp.Diff(want, byAddress(r)); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
}

func TestLoadTooManyModules(t *testing.T) {
	// Every level calls the next one twice: 2^15 instances.
	files := map[string]string{"root/main.tf": `module "a" { source = "../m0" }`}
	for i := range 15 {
		files[filepath.ToSlash(filepath.Join("m"+strconv.Itoa(i), "main.tf"))] =
			"module \"x\" { source = \"../m" + strconv.Itoa(i+1) + "\" }\n" +
				"module \"y\" { source = \"../m" + strconv.Itoa(i+1) + "\" }\n"
	}
	files["m15/main.tf"] = `resource "foo_thing" "a" {}`
	dir := writeTree(t, files)
	_, err := Load(from(t, dir, "root"))
	if err == nil || !strings.Contains(err.Error(), "Too many modules") {
		t.Errorf("Load error = %v, want too many modules", err)
	}
}

// from makes dir the working directory for the rest of the test and
// returns name: positions then read as they do when the command runs
// where the configuration is ("root/main.tf:4:23").
func from(t *testing.T, dir, name string) string {
	t.Helper()
	t.Chdir(dir)
	return name
}

package tfconfig

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// FuzzLoad writes the input as the only file of a module (main.tf, or
// main.tf.json) and checks that Load never panics and that its result is
// well formed: a Root with non-nil constraint lists, or an *Error with at
// least one problem.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		``,
		`terraform { required_providers { aws = { source = "hashicorp/aws", version = "~> 5.0" } } }`,
		"terraform {\n  required_providers {\n    aws = \"~> 1.0\"\n    foo = { source = \"acme/foo\", configuration_aliases = [foo.a] }\n  }\n}\n",
		"resource \"aws_instance\" \"a\" {\n  provider = aws.west[each.key]\n}\n",
		"resource \"aws_instance\" \"a\" {\n  provider = \"aws.west\"\n}\n",
		"data \"x\" \"y\" {}\nephemeral \"z_a\" \"b\" {}\ncheck \"c\" {\n  data \"q_r\" \"s\" {}\n}\n",
		"provider \"foo\" {\n  version = \">= 1.0\"\n  alias = \"x\"\n}\n",
		"import {\n  to = module.a[\"k\"].foo_x.y[0]\n  id = \"i\"\n  provider = bar\n}\n",
		"module \"a\" {\n  source = \"./\"\n}\n",
		"module \"a\" {\n  source = \"registry.terraform.io/x/y/aws\"\n}\n",
		"module \"a\" {\n  source = \"${var.x}\"\n}\n",
		"module \"a\" {\n  source = \"hashicorp/consul/aws//sub\"\n  version = \"~> 1.0\"\n}\n",
		"module \"a\" {\n  source = \"x.example:1/a/b/c\"\n  version = var.v\n}\n",
		"module \"a\" {\n  source = \"../up\"\n}\n",
		"required_providers {}\n",
		"terraform {\n  required_providers {\n    foo = { version = \"v1.0.0\" }\n  }\n}\n",
		"terraform {\n  required_providers {\n    foo = null\n    bar = true\n    baz = [1]\n  }\n}\n",
		`{"terraform": {"required_providers": {"aws": {"source": "hashicorp/aws", "version": "~> 5.0"}}}}`,
		`{"terraform": [{"required_providers": [{"aws": "~> 1.0"}]}], "resource": {"a_b": {"c": {"provider": "a.x"}}}}`,
		`{"import": [{"to": "a_b.c", "id": "x"}], "module": {"m": {"source": 3}}}`,
		`{"module": {"m": {"source": "a/b/c", "version": "${var.v}"}, "n": {"source": "a/b/c", "version": 1}}}`,
		"variable \"v\" {\n  type = list(object({a = optional(string, \"x\")}))\n  default = [{}]\n}\nlocals {\n  l = join(\"/\", [for o in var.v : o.a])\n  m = element(var.v, 3).a\n}\nmodule \"a\" {\n  source = \"${local.m}/b/c\"\n  version = format(\"~> %d.0\", length(var.v))\n}\n",
		"variable \"s\" {\n  default = \"a/b/c\"\n  sensitive = true\n}\nmodule \"a\" {\n  source = try(var.s, local.x, \"./\")\n  version = replace(var.s, \"/[a-z]/\", \"1\")\n}\n",
		"resource \"x\" {",
		"\xff\xfe",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, src []byte, asJSON bool) {
		dir := filepath.Join(t.TempDir(), "root")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		name := "main.tf"
		if asJSON {
			name = "main.tf.json"
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
		checkModuleCalls(t, dir)
		r, err := Load(dir)
		if err != nil {
			var lerr *Error
			if !errors.As(err, &lerr) || len(lerr.Problems) == 0 {
				t.Fatalf("Load error is not an *Error with problems: %#v", err)
			}
			if r != nil {
				t.Fatalf("Load returned a Root with an error")
			}
			for _, p := range lerr.Problems {
				if p.Summary == "" {
					t.Fatalf("problem without a summary: %#v", p)
				}
			}
			return
		}
		if r == nil || r.Providers == nil {
			t.Fatalf("Load returned %#v and no error", r)
		}
		checkModules(t, r.Modules)
		for p, cs := range r.Providers {
			if cs == nil {
				t.Fatalf("provider %s has a nil constraint list", p)
			}
			if p.IsZero() || p.IsBuiltIn() {
				t.Fatalf("unexpected provider %#v", p)
			}
			for _, c := range cs {
				if c.Pos == "" {
					t.Fatalf("constraint %q of %s has no position", c.Text, p)
				}
			}
		}
	})
}

// checkModuleCalls reads dir as a module package: ModuleCalls must return
// well formed calls or an *Error with problems.
func checkModuleCalls(t *testing.T, dir string) {
	t.Helper()
	mods, _, err := ModuleCalls(dir, "")
	if err != nil {
		var lerr *Error
		if !errors.As(err, &lerr) || len(lerr.Problems) == 0 || mods != nil {
			t.Fatalf("ModuleCalls: %#v, %#v", mods, err)
		}
		return
	}
	checkModules(t, mods)
}

// checkModules fails unless every package has a non-nil list of
// positioned constraints, valid or empty (any version), and not only
// empty ones.
func checkModules(t *testing.T, mods map[addrs.Module][]Constraint) {
	t.Helper()
	if mods == nil {
		t.Fatal("nil module calls")
	}
	for m, cs := range mods {
		if cs == nil || m.Host == "" || m.Namespace == "" || m.Name == "" || m.TargetSystem == "" {
			t.Fatalf("module %#v: constraints %#v", m, cs)
		}
		if len(cs) > 0 && !slices.ContainsFunc(cs, func(c Constraint) bool { return c.Text != "" }) {
			t.Fatalf("module %s: only calls without a version listed: %#v", m, cs)
		}
		for _, c := range cs {
			if c.Pos == "" || (c.Text != "" && addrs.CheckGoVersionConstraint(c.Text) != nil) {
				t.Fatalf("module %s: constraint %#v", m, c)
			}
		}
	}
}

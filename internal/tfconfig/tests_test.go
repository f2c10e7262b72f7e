package tfconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testsTree is a root module with test files: a provider block for a
// provider the configuration does not use, a mock provider (installs
// nothing), a run block testing a local module, one in tests/, and a
// .tofutest.hcl that replaces the .tftest.hcl of the same name.
var testsTree = map[string]string{
	"root/main.tf": `terraform {
  required_providers {
    foo = { source = "hashicorp/foo", version = "~> 1.0" }
    qux = { source = "registry.test/acme/qux" }
  }
}
resource "foo_thing" "a" {}
`,
	"root/main.tftest.hcl": `provider "qux" {
  version = "< 2.0.0"
}
mock_provider "aws" {}
run "unit" {
  module {
    source = "./testing/setup"
  }
}
`,
	"root/testing/setup/main.tf": `resource "bar_thing" "s" {}`,
	"root/tests/more.tftest.hcl": `provider "baz" {}`,
	"root/tests/x.tftest.hcl":    `provider "aws" {}`,
	"root/tests/x.tofutest.hcl":  `run "noop" {}`,
}

// TestTestFileProviders: providers that test files need are included, as
// Terraform 1.14's providers lock and tofu init do, each one only they
// need named in a warning; --no-tests leaves them out.
func TestTestFileProviders(t *testing.T) {
	dir := writeTree(t, testsTree)
	r, err := Load(from(t, dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]Constraint{
		foo: cs("~> 1.0", "root/main.tf:3"),
		qux: cs("< 2.0.0", "root/main.tftest.hcl:2"),
		bar: none(),
		baz: none(),
	}
	if diff := cmp.Diff(want, byAddress(r)); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	wantWarnings := []string{
		"root/main.tftest.hcl:2:13: Version constraints inside provider configuration blocks are deprecated: OpenTofu still honours them; move the constraint to required_providers.",
		"registry.opentofu.org/hashicorp/bar is needed only by test files (root/main.tftest.hcl); --no-tests leaves it out",
		"registry.opentofu.org/hashicorp/baz is needed only by test files (root/tests/more.tftest.hcl); --no-tests leaves it out",
	}
	if diff := cmp.Diff(wantWarnings, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}

	r, err = LoadWith(from(t, dir, "root"), Options{NoTests: true})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string][]Constraint{foo: cs("~> 1.0", "root/main.tf:3"), qux: none()}
	if diff := cmp.Diff(want, byAddress(r)); diff != "" {
		t.Errorf("NoTests: providers (-want +got):\n%s", diff)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("NoTests: warnings %q", r.Warnings)
	}
}

// TestTestFileErrors: a broken test file is a problem, as for tofu init;
// a run module that is not installed is a warning.
func TestTestFileErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf":         `resource "foo_thing" "a" {}`,
		"root/main.tftest.hcl": "run \"x\" {\n  module {\n    source = \"./missing\"\n  }\n}\n",
	})
	_, err := Load(from(t, dir, "root"))
	if err == nil || !strings.Contains(err.Error(), "root/main.tftest.hcl:1:1: Unreadable module directory") {
		t.Errorf("missing run module: %v", err)
	}
	dir = writeTree(t, map[string]string{
		"root/main.tf":               `resource "foo_thing" "a" {}`,
		"root/tests/main.tftest.hcl": "run \"x\" {\n  module {\n    source  = \"acme/net/aws\"\n    version = \"~> 1.0\"\n  }\n}\n",
	})
	r, err := Load(from(t, dir, "root"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]Constraint{"registry.opentofu.org/acme/net/aws": cs("~> 1.0", "root/tests/main.tftest.hcl:4")}, modulesOf(r)); diff != "" {
		t.Errorf("run module (-want +got):\n%s", diff)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "module.test.module.tests.module.main.module.x (acme/net/aws)") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

package tfconfig

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/inputerr"
)

// TestConstraintsThatAllowNoVersion: constraints that no version can meet
// together, across the module tree, are an input error naming each of
// them where it is written, before any registry is asked.
func TestConstraintsThatAllowNoVersion(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"root/main.tf": `terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 5.0" }
    foo = { source = "hashicorp/foo", version = ">= 3.0, < 2.0" }
  }
}
module "net" { source = "./net" }
`,
		"root/net/versions.tf": `terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 4.0" }
  }
}
`,
		"fine/main.tf": `terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = ">= 4.0" }
  }
}
module "net" { source = "../root/net" }
`,
	})
	_, err := LoadConfigurations([]string{from(t, dir, "root")}, Options{})
	if err == nil {
		t.Fatal("LoadConfigurations succeeded, want an error")
	}
	if !inputerr.Is(err) {
		t.Errorf("error is not an input error: %v", err)
	}
	for _, want := range []string{
		`provider registry.opentofu.org/hashicorp/aws: its version constraints ">= 5.0" (root/main.tf:3), "~> 4.0" (root/net/versions.tf:3) together allow no version`,
		`provider registry.opentofu.org/hashicorp/foo: its version constraint ">= 3.0, < 2.0" (root/main.tf:4) allows no version`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	cfgs, err := LoadConfigurations([]string{filepath.Join(dir, "fine")}, Options{})
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("constraints that allow some version refused: %v", err)
	}
}

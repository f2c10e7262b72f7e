package config

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// CheckInstallationSnippet refuses a CLI configuration snippet (a bundle's
// cli-config/ file) that holds anything but comments and
// provider_installation blocks: an operator copies it into a client's
// configuration, where a credentials block or another setting would do
// what the operator never asked for.
func CheckInstallationSnippet(src []byte, filename string) error {
	if err := hclsafe.CheckDepth(src, filename, hclsafe.Native); err != nil {
		return err
	}
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return fmt.Errorf("not a CLI configuration: %w", diags)
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return errors.New("not a CLI configuration")
	}
	if len(body.Attributes) > 0 {
		return errors.New("holds attributes: a snippet holds only provider_installation blocks")
	}
	for _, b := range body.Blocks {
		if b.Type != "provider_installation" {
			return fmt.Errorf("holds a %s block: a snippet holds only provider_installation blocks", excerpt.Quote(b.Type))
		}
	}
	return nil
}

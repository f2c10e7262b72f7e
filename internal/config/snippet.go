package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfmirror/tfmirror/internal/excerpt"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
)

// CheckInstallationSnippet refuses a CLI configuration snippet (a bundle's
// cli-config/ file) that holds anything but comments, provider_installation
// blocks and host blocks whose services all point below servicesPrefix:
// an operator copies it into a client's configuration, where a
// credentials block, another setting, or a service at a host the operator
// never named would do what the operator never asked for. An empty
// servicesPrefix allows no host block.
func CheckInstallationSnippet(src []byte, filename, servicesPrefix string) error {
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
		return errors.New("holds attributes: a snippet holds only provider_installation and host blocks")
	}
	for _, b := range body.Blocks {
		switch {
		case b.Type == "provider_installation":
		case b.Type == "host" && servicesPrefix != "":
			if err := checkHostSnippet(b, servicesPrefix); err != nil {
				return err
			}
		default:
			return fmt.Errorf("holds a %s block: a snippet holds only provider_installation and host blocks", excerpt.Quote(b.Type))
		}
	}
	return nil
}

// checkHostSnippet allows a host block that only names services, each a
// literal URL below prefix.
func checkHostSnippet(b *hclsyntax.Block, prefix string) error {
	name := "a host block"
	if len(b.Labels) == 1 {
		name = "host " + excerpt.Quote(b.Labels[0])
	}
	services, ok := b.Body.Attributes["services"]
	if len(b.Labels) != 1 || len(b.Body.Blocks) > 0 || len(b.Body.Attributes) != 1 || !ok {
		return fmt.Errorf("%s: a snippet's host block holds only services", name)
	}
	v, diags := services.Expr.Value(nil)
	if diags.HasErrors() || v.IsNull() || !v.IsWhollyKnown() || !v.Type().IsObjectType() && !v.Type().IsMapType() {
		return fmt.Errorf("%s: services is not a literal map of URLs", name)
	}
	for it := v.ElementIterator(); it.Next(); {
		id, u := it.Element()
		if u.IsNull() || u.Type() != cty.String || !strings.HasPrefix(u.AsString(), prefix) {
			return fmt.Errorf("%s: service %s points outside %s", name, excerpt.Quote(id.AsString()), prefix)
		}
	}
	return nil
}

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

// Placeholders are what a bundle's CLI configuration snippets hold where
// the operator writes the mirror's URL or path.
type Placeholders struct {
	URL  string // a network mirror's URL, and the prefix of every service URL
	Path string // a filesystem mirror's path
}

// CheckInstallationSnippet refuses a CLI configuration snippet (a bundle's
// cli-config/ file) that holds anything but comments, provider_installation
// blocks installing from the placeholders alone (a network_mirror at the
// URL, a filesystem_mirror at the path) and host blocks whose services
// all point below the URL: an operator copies it into a client's
// configuration, where a credentials block, another setting, a direct
// block or a mirror or service at a host the operator never named would
// do what the operator never asked for. An empty URL allows no host
// block.
func CheckInstallationSnippet(src []byte, filename string, at Placeholders) error {
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
		var err error
		switch {
		case b.Type == "provider_installation":
			err = checkInstallation(b, at)
		case b.Type == "host" && at.URL != "":
			err = checkHostSnippet(b, at.URL)
		default:
			err = fmt.Errorf("holds a %s block: a snippet holds only provider_installation and host blocks", excerpt.Quote(b.Type))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkInstallation allows a provider_installation block of network and
// filesystem mirrors at the placeholders, as bundle create writes them.
func checkInstallation(b *hclsyntax.Block, at Placeholders) error {
	if len(b.Body.Attributes) > 0 || len(b.Labels) > 0 {
		return errors.New("provider_installation holds attributes or labels: a snippet's holds only network_mirror and filesystem_mirror blocks")
	}
	for _, m := range b.Body.Blocks {
		var where, want string
		allowed := map[string]bool{}
		switch m.Type {
		case "network_mirror":
			where, want, allowed["url"], allowed["trust_all_hashes"] = "url", at.URL, true, true
		case "filesystem_mirror":
			where, want, allowed["path"] = "path", at.Path, true
		default:
			return fmt.Errorf("provider_installation holds a %s block: a snippet's installs only from the mirror (network_mirror, filesystem_mirror)", excerpt.Quote(m.Type))
		}
		for name := range m.Body.Attributes {
			if !allowed[name] {
				return fmt.Errorf("%s holds %s: a snippet's holds only %s", m.Type, excerpt.Quote(name), where)
			}
		}
		attr, ok := m.Body.Attributes[where]
		if !ok || len(m.Body.Blocks) > 0 {
			return fmt.Errorf("%s: a snippet's names the mirror by its %s alone", m.Type, where)
		}
		v, diags := attr.Expr.Value(nil)
		if diags.HasErrors() || v.IsNull() || !v.IsWhollyKnown() || v.Type() != cty.String || want == "" || v.AsString() != want {
			return fmt.Errorf("%s: its %s is not the placeholder %s", m.Type, where, want)
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

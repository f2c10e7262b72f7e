package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

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
//
// The clients read CLI configurations with HCL 1, whose strings differ
// from HCL 2's (an escaped "$${" starts an interpolation there, which can
// swallow what HCL 2 reads as a comment and so hide a block from this
// check). So every value is checked as written, not as HCL 2 evaluates
// it: a string holds only characters that mean the same to both ("URL
// characters", no "$", "%", "{", "}", quote or backslash), a bool is the
// bare word true or false.
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
	c := snippet{src: src, at: at}
	for _, b := range body.Blocks {
		var err error
		switch {
		case b.Type == "provider_installation":
			err = c.installation(b)
		case b.Type == "host" && at.URL != "":
			err = c.host(b)
		default:
			err = fmt.Errorf("holds a %s block: a snippet holds only provider_installation and host blocks", excerpt.Quote(b.Type))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// snippet is a snippet's source, checked against the placeholders.
type snippet struct {
	src []byte
	at  Placeholders
}

// safeString is a quoted string both HCL versions read as its text.
var safeString = regexp.MustCompile(`^"[A-Za-z0-9._~:/?#\[\]@!&'()*+,;=-]*"$`)

// written is the source text of rng.
func (c snippet) written(rng hcl.Range) string {
	if rng.Start.Byte < 0 || rng.End.Byte > len(c.src) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return string(c.src[rng.Start.Byte:rng.End.Byte])
}

// installation allows a provider_installation block of network and
// filesystem mirrors at the placeholders, as bundle create writes them.
func (c snippet) installation(b *hclsyntax.Block) error {
	if len(b.Body.Attributes) > 0 || len(b.Labels) > 0 {
		return errors.New("provider_installation holds attributes or labels: a snippet's holds only network_mirror and filesystem_mirror blocks")
	}
	for _, m := range b.Body.Blocks {
		var where, want string
		switch m.Type {
		case "network_mirror":
			where, want = "url", c.at.URL
		case "filesystem_mirror":
			where, want = "path", c.at.Path
		default:
			return fmt.Errorf("provider_installation holds a %s block: a snippet's installs only from the mirror (network_mirror, filesystem_mirror)", excerpt.Quote(m.Type))
		}
		if len(m.Labels) > 0 || len(m.Body.Blocks) > 0 {
			return fmt.Errorf("%s: a snippet's names the mirror by its %s alone", m.Type, where)
		}
		for _, name := range slices.Sorted(maps.Keys(m.Body.Attributes)) {
			written := c.written(m.Body.Attributes[name].Expr.Range())
			switch {
			case name == where && (want == "" || written != `"`+want+`"` || !safeString.MatchString(written)):
				return fmt.Errorf("%s: its %s is not the placeholder %s, written as a plain string", m.Type, where, want)
			case name == "trust_all_hashes" && m.Type == "network_mirror" && written != "true" && written != "false":
				return fmt.Errorf("%s: trust_all_hashes is not the bare word true or false", m.Type)
			case name != where && name != "trust_all_hashes", name == "trust_all_hashes" && m.Type != "network_mirror":
				return fmt.Errorf("%s holds %s: a snippet's holds only %s", m.Type, excerpt.Quote(name), where)
			}
		}
		if _, ok := m.Body.Attributes[where]; !ok {
			return fmt.Errorf("%s: a snippet's names the mirror by its %s", m.Type, where)
		}
	}
	return nil
}

// host allows a host block that only names services, each written as a
// plain string URL below the URL placeholder.
func (c snippet) host(b *hclsyntax.Block) error {
	name := "a host block"
	if len(b.Labels) == 1 {
		name = "host " + excerpt.Quote(b.Labels[0])
	}
	services, ok := b.Body.Attributes["services"]
	if len(b.Labels) != 1 || len(b.Body.Blocks) > 0 || len(b.Body.Attributes) != 1 || !ok {
		return fmt.Errorf("%s: a snippet's host block holds only services", name)
	}
	if label := strings.Trim(c.written(b.LabelRanges[0]), `"`); label == "" || strings.ContainsAny(label, "$%{}\\\"") {
		return fmt.Errorf("%s: the host name is not written as a plain string", name)
	}
	obj, ok := services.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return fmt.Errorf("%s: services is not a literal map of URLs", name)
	}
	for _, item := range obj.Items {
		id, u := c.written(item.KeyExpr.Range()), c.written(item.ValueExpr.Range())
		if !safeString.MatchString(id) || !safeString.MatchString(u) {
			return fmt.Errorf("%s: services is not a literal map of URLs written as plain strings", name)
		}
		if !strings.HasPrefix(u, `"`+c.at.URL) {
			return fmt.Errorf("%s: service %s points outside %s", name, id, c.at.URL)
		}
	}
	return nil
}

package ocistore

import (
	"fmt"
	"strings"

	"oras.land/oras-go/v2/registry"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// repoTemplate is OpenTofu's oci_mirror repository_template: an HCL
// string template whose only variables are hostname, namespace and type.
//
// tfmirror does not evaluate HCL expressions (only the HCL adapters know
// HCL): a template is literal text with ${hostname}, ${namespace} and
// ${type} interpolations (spaces and the ~ strip markers allowed inside
// the braces), and the escapes $${ and %%{. Anything else, a directive
// (%{...}) or another expression, is refused with a message saying so;
// no practical repository template needs more.
type repoTemplate struct {
	raw   string
	parts []templatePart
	uses  map[string]bool
}

type templatePart struct {
	literal  string
	variable string // "" for a literal
}

var templateVariables = map[string]bool{"hostname": true, "namespace": true, "type": true}

// exampleProvider is what OpenTofu renders a template with to check it
// when it loads its CLI configuration.
var exampleProvider = addrs.Provider{Hostname: "example.com", Namespace: "example-namespace", Type: "example-type"}

func parseTemplate(raw string) (*repoTemplate, error) {
	t := &repoTemplate{raw: raw, uses: map[string]bool{}}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, templatePart{literal: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(raw); {
		switch {
		case strings.HasPrefix(raw[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(raw[i:], "%%{"):
			lit.WriteString("%{")
			i += 3
		case strings.HasPrefix(raw[i:], "%{"):
			return nil, fmt.Errorf("invalid repository template %q: template directives (%%{...}) are not supported; use only ${hostname}, ${namespace} and ${type}", raw)
		case strings.HasPrefix(raw[i:], "${"):
			end := strings.IndexByte(raw[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("invalid repository template %q: unclosed ${", raw)
			}
			expr := raw[i+2 : i+end]
			name := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(expr), "~"), "~"))
			if !templateVariables[name] {
				return nil, fmt.Errorf("invalid repository template %q: ${%s} is not available; only ${hostname}, ${namespace} and ${type} can be used (as in OpenTofu's oci_mirror)", raw, expr)
			}
			flush()
			t.parts = append(t.parts, templatePart{variable: name})
			t.uses[name] = true
			i += end + 1
		default:
			lit.WriteByte(raw[i])
			i++
		}
	}
	flush()
	// As OpenTofu does when it loads its configuration: the template must
	// give a repository address for an example provider.
	if _, _, err := splitRepository(t.render(exampleProvider)); err != nil {
		return nil, fmt.Errorf("invalid repository template %q: for the provider %s it gives %q, which is not a registry host followed by a slash and a repository name: %w",
			raw, exampleProvider, t.render(exampleProvider), err)
	}
	return t, nil
}

// render substitutes p's address parts as OpenTofu does: the hostname in
// its ASCII (punycode) form, the namespace and type as they are.
func (t *repoTemplate) render(p addrs.Provider) string {
	return t.renderParts(p.Hostname.String(), p.Namespace, p.Type)
}

// renderParts substitutes the values of ${hostname}, ${namespace} and
// ${type} (a provider's, or a module package's: see ModuleRepository).
func (t *repoTemplate) renderParts(hostname, namespace, typ string) string {
	var b strings.Builder
	for _, part := range t.parts {
		switch part.variable {
		case "":
			b.WriteString(part.literal)
		case "hostname":
			b.WriteString(hostname)
		case "namespace":
			b.WriteString(namespace)
		case "type":
			b.WriteString(typ)
		}
	}
	return b.String()
}

// splitRepository parses a repository address "host[:port]/path" as
// OpenTofu does (oras's reference parser; no tag or digest).
func splitRepository(addr string) (registryHost, repository string, err error) {
	if !strings.Contains(addr, "/") {
		return "", "", fmt.Errorf("%q has no repository path", addr)
	}
	ref, err := registry.ParseReference(addr)
	if err != nil {
		return "", "", err
	}
	if ref.Reference != "" {
		return "", "", fmt.Errorf("%q names a tag or digest", addr)
	}
	return ref.Registry, ref.Repository, nil
}

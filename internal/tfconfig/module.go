package tfconfig

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	tfaddr "github.com/opentofu/registry-address/v2"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// module is what one module directory contributes, whichever call reaches
// it: the providers it needs (with the constraints written in it) and the
// modules it calls.
type module struct {
	needs []need
	calls []*callDecl // by name
	// empty is true when the directory has no configuration files.
	empty bool
}

// need is one provider a module needs, with one constraint or none.
type need struct {
	provider   addrs.Provider
	constraint *constraintDecl
}

// readModule reads the configuration files of a module directory and
// combines them as OpenTofu does: primary files in name order, then
// override files. Problems are appended to diags.
func (l *loader) readModule(dir string, diags *hcl.Diagnostics) *module {
	primaryNames, overrideNames, err := configFiles(dir)
	if err != nil {
		*diags = append(*diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Failed to read module directory",
			Detail:   fmt.Sprintf("Module directory %s does not exist or cannot be read: %s.", l.displayPath(dir), errText(err)),
		})
		return &module{empty: true}
	}
	read := func(names []string, override bool) []*fileDecl {
		var out []*fileDecl
		for _, name := range names {
			path := filepath.Join(dir, name)
			body, d := parseFile(path, l.displayPath(path))
			*diags = append(*diags, d...)
			if body == nil {
				continue
			}
			out = append(out, decodeFile(body, override, diags))
		}
		return out
	}
	primary := read(primaryNames, false)
	override := read(overrideNames, true)
	m := combine(primary, override, diags)
	m.empty = len(primaryNames)+len(overrideNames) == 0
	return m
}

// combine merges the declarations of a module's files and resolves every
// provider the module needs.
func combine(primary, override []*fileDecl, diags *hcl.Diagnostics) *module {
	// required_providers: one block among the primary files; entries in
	// override files replace the entry of the same local name.
	reqs := map[string]*reqEntry{}
	var firstReq *reqBlock
	for _, f := range primary {
		for _, rb := range f.reqBlocks {
			if firstReq != nil {
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate required providers configuration",
					Detail:   fmt.Sprintf("A module may have only one required providers configuration. The required providers were previously configured at %s.", firstReq.rng),
					Subject:  rb.rng.Ptr(),
				})
				continue
			}
			firstReq = rb
			for _, e := range rb.entries {
				reqs[e.name] = e
			}
		}
	}
	for _, f := range override {
		for _, rb := range f.reqBlocks {
			for _, e := range rb.entries {
				reqs[e.name] = e
			}
		}
	}

	providers := map[string]*providerDecl{}
	var providerOrder []*providerDecl
	resources := map[string]*resourceDecl{}
	var resourceOrder []*resourceDecl
	var imports []*importDecl
	calls := map[string]*callDecl{}
	for _, f := range primary {
		for _, p := range f.providers {
			if existing, ok := providers[p.key()]; ok {
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate provider configuration",
					Detail:   fmt.Sprintf("A provider configuration for %q was already given at %s. Each configuration for the same provider must have a distinct alias.", p.key(), existing.rng),
					Subject:  p.rng.Ptr(),
				})
				continue
			}
			providers[p.key()] = p
			providerOrder = append(providerOrder, p)
		}
		for _, r := range f.resources {
			if _, ok := resources[r.key()]; !ok {
				resources[r.key()] = r
			}
			resourceOrder = append(resourceOrder, r)
		}
		imports = append(imports, f.imports...)
		for _, c := range f.calls {
			if existing, ok := calls[c.name]; ok {
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Duplicate module call",
					Detail:   fmt.Sprintf("A module call named %q was already defined at %s. Module calls must have unique names within a module.", c.name, existing.rng),
					Subject:  c.rng.Ptr(),
				})
				continue
			}
			calls[c.name] = c
		}
	}
	for _, f := range override {
		for _, p := range f.providers {
			existing, ok := providers[p.key()]
			switch {
			case ok:
				if p.version != nil {
					existing.version = p.version
				}
			case p.alias == "":
				// An absent default configuration is an empty one, so
				// it can be overridden.
				providers[p.key()] = p
				providerOrder = append(providerOrder, p)
			default:
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Missing base provider configuration for override",
					Detail:   fmt.Sprintf("There is no %s provider configuration with the alias %q. An override file can only override an aliased provider configuration that was already defined in a primary configuration file.", p.name, p.alias),
					Subject:  p.rng.Ptr(),
				})
			}
		}
		for _, r := range f.resources {
			existing, ok := resources[r.key()]
			if !ok {
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Missing " + r.mode + " block to override",
					Detail:   fmt.Sprintf("There is no %s %q %q block. An override file can only override a block defined in a primary configuration file.", r.mode, r.typ, r.name),
					Subject:  r.rng.Ptr(),
				})
				continue
			}
			if r.ref != "" {
				existing.ref = r.ref
			}
		}
		for _, imp := range f.imports {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot override 'import' blocks",
				Detail:   "Import blocks can appear only in normal files, not in override files.",
				Subject:  imp.rng.Ptr(),
			})
		}
		for _, c := range f.calls {
			existing, ok := calls[c.name]
			if !ok {
				*diags = append(*diags, &hcl.Diagnostic{
					Severity: hcl.DiagError,
					Summary:  "Missing module call to override",
					Detail:   fmt.Sprintf("There is no module call named %q. An override file can only override a module call that was defined in a primary configuration file.", c.name),
					Subject:  c.rng.Ptr(),
				})
				continue
			}
			if c.sourceSet {
				existing.source, existing.static, existing.sourceSet = c.source, c.static, true
			}
		}
	}

	m := &module{}
	add := func(t providerTarget, c *constraintDecl) {
		if t.builtin {
			return
		}
		if c != nil && !checkConstraint(c, diags) {
			c = nil
		}
		m.needs = append(m.needs, need{provider: t.provider, constraint: c})
	}
	// forLocal maps a local provider name through required_providers.
	forLocal := func(local string, rng hcl.Range) (providerTarget, bool) {
		if e, ok := reqs[local]; ok {
			return e.target, true
		}
		t, err := impliedTarget(local)
		if err != nil {
			*diags = append(*diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid provider",
				Detail:   fmt.Sprintf("The local provider name %q implies a provider that cannot be installed: %s.", local, err),
				Subject:  rng.Ptr(),
			})
			return t, false
		}
		return t, true
	}

	reqNames := make([]string, 0, len(reqs))
	for name := range reqs {
		reqNames = append(reqNames, name)
	}
	sort.Strings(reqNames)
	for _, name := range reqNames {
		add(reqs[name].target, reqs[name].version)
	}
	for _, r := range resourceOrder {
		local := r.ref
		if local == "" {
			local = impliedLocalName(r.typ)
			if local == "" {
				// OpenTofu reports the invalid type elsewhere and
				// implies no provider.
				continue
			}
		}
		if t, ok := forLocal(local, r.rng); ok {
			add(t, nil)
		}
	}
	for _, imp := range imports {
		local := imp.ref
		if local == "" {
			local = impliedLocalName(imp.resType)
			if local == "" {
				continue
			}
		}
		if t, ok := forLocal(local, imp.rng); ok {
			add(t, nil)
		}
	}
	for _, p := range providerOrder {
		if t, ok := forLocal(p.name, p.rng); ok {
			add(t, p.version)
		}
	}

	for _, c := range calls {
		m.calls = append(m.calls, c)
	}
	sort.Slice(m.calls, func(i, j int) bool { return m.calls[i].name < m.calls[j].name })
	return m
}

// impliedLocalName is the local provider name a resource type implies: the
// type up to its first underscore, normalized, or "" if that is not a valid
// provider name (OpenTofu then implies no provider for it).
func impliedLocalName(resType string) string {
	name, _, _ := strings.Cut(resType, "_")
	norm, err := tfaddr.ParseProviderPart(name)
	if err != nil {
		return ""
	}
	return norm
}

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
	// vars and locals are the module's input variables and local values,
	// for evaluating its calls' source and version.
	vars   map[string]*varDecl
	locals map[string]*hcl.Attribute
	// reqs are its required_providers entries by local name, which test
	// files' provider blocks refer to.
	reqs map[string]*reqEntry
	// empty is true when the directory has no configuration files.
	empty bool
}

// need is one provider a module needs, with one constraint or none.
type need struct {
	provider    addrs.Provider
	constraint  *constraintDecl
	impliedHost bool // the address names no host (providerTarget)
}

// readModule reads the configuration files of a module directory and
// combines them as OpenTofu does: primary files in name order, then
// override files. Problems are appended to diags.
func (l *loader) readModule(dir string, diags *hcl.Diagnostics) *module {
	primaryNames, overrideNames, err := configFiles(dir, l.terraform)
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
			if d := l.fileOutsidePackage(path); d != nil {
				*diags = append(*diags, d)
				continue
			}
			body, d := parseFile(path, l.displayPath(path), l.budget)
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
	mg := &merger{
		diags:     diags,
		reqs:      map[string]*reqEntry{},
		providers: map[string]*providerDecl{},
		resources: map[string]*resourceDecl{},
		calls:     map[string]*callDecl{},
		vars:      map[string]*varDecl{},
		locals:    map[string]*hcl.Attribute{},
	}
	mg.addRequiredProviders(primary)
	mg.overrideRequiredProviders(override)
	for _, f := range primary {
		mg.addFile(f)
	}
	for _, f := range override {
		mg.overrideFile(f)
	}
	mg.resolveNeeds()
	return &module{needs: mg.needs, calls: mg.sortedCalls(), vars: mg.vars, locals: mg.locals, reqs: mg.reqs}
}

// merger holds the declarations of a module's files while combine merges them.
type merger struct {
	diags *hcl.Diagnostics

	reqs          map[string]*reqEntry // by local name
	providers     map[string]*providerDecl
	providerOrder []*providerDecl
	resources     map[string]*resourceDecl // the first block of each address
	resourceOrder []*resourceDecl
	imports       []*importDecl
	calls         map[string]*callDecl
	vars          map[string]*varDecl
	locals        map[string]*hcl.Attribute

	needs []need
}

// errorAt appends an error diagnostic about the block at rng.
func (mg *merger) errorAt(rng hcl.Range, summary, detail string) {
	*mg.diags = append(*mg.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  rng.Ptr(),
	})
}

// addRequiredProviders keeps the entries of the one required_providers
// block the primary files may have, and reports any other.
func (mg *merger) addRequiredProviders(primary []*fileDecl) {
	var first *reqBlock
	for _, f := range primary {
		for _, rb := range f.reqBlocks {
			if first != nil {
				mg.errorAt(rb.rng, "Duplicate required providers configuration",
					fmt.Sprintf("A module may have only one required providers configuration. The required providers were previously configured at %s.", first.rng))
				continue
			}
			first = rb
			for _, e := range rb.entries {
				mg.reqs[e.name] = e
			}
		}
	}
}

// overrideRequiredProviders lets each required_providers entry of the
// override files replace the entry of the same local name.
func (mg *merger) overrideRequiredProviders(override []*fileDecl) {
	for _, f := range override {
		for _, rb := range f.reqBlocks {
			for _, e := range rb.entries {
				mg.reqs[e.name] = e
			}
		}
	}
}

// addFile adds the provider blocks, resources, import blocks and module
// calls of a primary file.
func (mg *merger) addFile(f *fileDecl) {
	mg.addProviders(f.providers)
	mg.addResources(f.resources)
	mg.imports = append(mg.imports, f.imports...)
	mg.addCalls(f.calls)
	mg.addValues(f)
}

// overrideFile applies the provider blocks, resources, import blocks and
// module calls of an override file.
func (mg *merger) overrideFile(f *fileDecl) {
	mg.overrideProviders(f.providers)
	mg.overrideResources(f.resources)
	mg.rejectImports(f.imports)
	mg.overrideCalls(f.calls)
	mg.overrideValues(f)
}

// addProviders adds the provider blocks of a primary file, reporting
// duplicate configurations.
func (mg *merger) addProviders(providers []*providerDecl) {
	for _, p := range providers {
		if existing, ok := mg.providers[p.key()]; ok {
			mg.errorAt(p.rng, "Duplicate provider configuration",
				fmt.Sprintf("A provider configuration for %q was already given at %s. Each configuration for the same provider must have a distinct alias.", p.key(), existing.rng))
			continue
		}
		mg.providers[p.key()] = p
		mg.providerOrder = append(mg.providerOrder, p)
	}
}

// addResources adds the resource blocks of a primary file.
func (mg *merger) addResources(resources []*resourceDecl) {
	for _, r := range resources {
		if _, ok := mg.resources[r.key()]; !ok {
			mg.resources[r.key()] = r
		}
		mg.resourceOrder = append(mg.resourceOrder, r)
	}
}

// addCalls adds the module calls of a primary file, reporting duplicate
// names.
func (mg *merger) addCalls(calls []*callDecl) {
	for _, c := range calls {
		if existing, ok := mg.calls[c.name]; ok {
			mg.errorAt(c.rng, "Duplicate module call",
				fmt.Sprintf("A module call named %q was already defined at %s. Module calls must have unique names within a module.", c.name, existing.rng))
			continue
		}
		mg.calls[c.name] = c
	}
}

// overrideProviders applies the provider blocks of an override file.
func (mg *merger) overrideProviders(providers []*providerDecl) {
	for _, p := range providers {
		existing, ok := mg.providers[p.key()]
		switch {
		case ok:
			if p.version != nil {
				existing.version = p.version
			}
		case p.alias == "":
			// An absent default configuration is an empty one, so
			// it can be overridden.
			mg.providers[p.key()] = p
			mg.providerOrder = append(mg.providerOrder, p)
		default:
			mg.errorAt(p.rng, "Missing base provider configuration for override",
				fmt.Sprintf("There is no %s provider configuration with the alias %q. An override file can only override an aliased provider configuration that was already defined in a primary configuration file.", p.name, p.alias))
		}
	}
}

// overrideResources applies the resource blocks of an override file.
func (mg *merger) overrideResources(resources []*resourceDecl) {
	for _, r := range resources {
		existing, ok := mg.resources[r.key()]
		if !ok {
			mg.errorAt(r.rng, "Missing "+r.mode+" block to override",
				fmt.Sprintf("There is no %s %q %q block. An override file can only override a block defined in a primary configuration file.", r.mode, r.typ, r.name))
			continue
		}
		if r.ref != "" {
			existing.ref = r.ref
		}
	}
}

// rejectImports reports the import blocks of an override file.
func (mg *merger) rejectImports(imports []*importDecl) {
	for _, imp := range imports {
		mg.errorAt(imp.rng, "Cannot override 'import' blocks",
			"Import blocks can appear only in normal files, not in override files.")
	}
}

// overrideCalls applies the module calls of an override file.
func (mg *merger) overrideCalls(calls []*callDecl) {
	for _, c := range calls {
		existing, ok := mg.calls[c.name]
		if !ok {
			mg.errorAt(c.rng, "Missing module call to override",
				fmt.Sprintf("There is no module call named %q. An override file can only override a module call that was defined in a primary configuration file.", c.name))
			continue
		}
		if c.sourceSet {
			existing.source, existing.static, existing.sourceSet = c.source, c.static, true
			existing.sourceAttr = c.sourceAttr
		}
		if c.versionSet {
			existing.version, existing.versionDynamic, existing.versionSet = c.version, c.versionDynamic, true
			existing.versionAttr = c.versionAttr
		}
		for name, a := range c.args {
			if existing.args == nil {
				existing.args = hcl.Attributes{}
			}
			existing.args[name] = a
		}
	}
}

// resolveNeeds lists the providers of the required_providers entries by
// local name, then those of resources, import blocks and provider blocks.
func (mg *merger) resolveNeeds() {
	names := make([]string, 0, len(mg.reqs))
	for name := range mg.reqs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		mg.addNeed(mg.reqs[name].target, mg.reqs[name].version)
	}
	for _, r := range mg.resourceOrder {
		// For an invalid type, OpenTofu reports the type elsewhere and
		// implies no provider.
		if local := blockLocalName(r.ref, r.typ); local != "" {
			mg.addLocal(local, r.rng, nil)
		}
	}
	for _, imp := range mg.imports {
		if local := blockLocalName(imp.ref, imp.resType); local != "" {
			mg.addLocal(local, imp.rng, nil)
		}
	}
	for _, p := range mg.providerOrder {
		mg.addLocal(p.name, p.rng, p.version)
	}
}

// addLocal adds the provider a local name maps to, with constraint c, if the
// name maps to one.
func (mg *merger) addLocal(local string, rng hcl.Range, c *constraintDecl) {
	if t, ok := mg.forLocal(local, rng); ok {
		mg.addNeed(t, c)
	}
}

// forLocal maps a local provider name through required_providers.
func (mg *merger) forLocal(local string, rng hcl.Range) (providerTarget, bool) {
	if e, ok := mg.reqs[local]; ok {
		return e.target, true
	}
	t, err := impliedTarget(local)
	if err != nil {
		mg.errorAt(rng, "Invalid provider",
			fmt.Sprintf("The local provider name %q implies a provider that cannot be installed: %s.", local, err))
		return t, false
	}
	return t, true
}

// addNeed records that the module needs t, with constraint c unless it is
// invalid; built-in providers are skipped.
func (mg *merger) addNeed(t providerTarget, c *constraintDecl) {
	if t.builtin {
		return
	}
	if c != nil && !checkConstraint(c, mg.diags) {
		c = nil
	}
	mg.needs = append(mg.needs, need{provider: t.provider, constraint: c, impliedHost: t.impliedHost})
}

// sortedCalls lists the module calls by name.
func (mg *merger) sortedCalls() []*callDecl {
	var calls []*callDecl
	for _, c := range mg.calls {
		calls = append(calls, c)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].name < calls[j].name })
	return calls
}

// blockLocalName is the local provider name of a resource or import block:
// its provider argument, else the name its resource type implies, or "".
func blockLocalName(ref, resType string) string {
	if ref != "" {
		return ref
	}
	return impliedLocalName(resType)
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

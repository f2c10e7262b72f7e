package tfconfig

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// passedProvider is one entry of a module call's providers argument: the
// child's local name (and alias) and the parent's it is given.
type passedProvider struct {
	child, childName string // "name" or "name.alias", and the name alone
	parentName       string
	rng              hcl.Range // the entry's key
}

// passedProviders reads a module call's providers argument as OpenTofu
// does (a map of provider references, KEY = VALUE). Entries OpenTofu
// would refuse for their form are left out: it reports them itself.
func passedProviders(c *callDecl) []passedProvider {
	attr, ok := c.args["providers"]
	if !ok {
		return nil
	}
	pairs, diags := hcl.ExprMap(attr.Expr)
	if diags.HasErrors() {
		return nil
	}
	var out []passedProvider
	for _, pair := range pairs {
		var ignored hcl.Diagnostics // OpenTofu reports a reference it cannot read
		child, alias := providerConfigRef(pair.Key, &ignored)
		parent, _ := providerConfigRef(pair.Value, &ignored)
		if child == "" || parent == "" {
			continue
		}
		key := child
		if alias != "" {
			key += "." + alias
		}
		out = append(out, passedProvider{child: key, childName: child, parentName: parent, rng: pair.Key.Range()})
	}
	return out
}

// checkPassedProviders refuses, as OpenTofu's init does ("Provider type
// mismatch"), a provider configuration passed to a module whose local name
// there stands for another provider. The types are OpenTofu's: the
// child's by its required_providers, else the name's implied provider;
// the parent's likewise, but by the parent's required_providers entry of
// the child's local name when it has one.
func (l *loader) checkPassedProviders(c *callDecl, parent *frame, child *frame, childMod *module) {
	for _, p := range passedProviders(c) {
		childTy, ok := localTarget(childMod, p.childName)
		if !ok {
			continue
		}
		parentTy, ok := localTarget(parent.mod, p.parentName)
		if e, declared := parent.mod.reqs[p.child]; declared {
			parentTy, ok = e.target, true
		}
		if !ok || childTy.builtin || parentTy.builtin || childTy.provider == parentTy.provider {
			continue
		}
		l.errorAt(p.rng, "Provider type mismatch", fmt.Sprintf(
			"The local name %q in %s represents provider %q, but %q in %s represents %q: %s cannot be given a configuration of another provider, and \"tofu init\" refuses the configuration.",
			p.parentName, moduleText(parent.path), parentTy.provider.ForDisplay(), p.childName, moduleText(child.path), childTy.provider.ForDisplay(), p.child))
	}
}

// localTarget is the provider a module's local name stands for.
func localTarget(m *module, name string) (providerTarget, bool) {
	if m == nil {
		return providerTarget{}, false
	}
	if e, ok := m.reqs[name]; ok {
		return e.target, true
	}
	t, err := impliedTarget(name)
	return t, err == nil
}

// moduleText names a module as OpenTofu's messages do.
func moduleText(path []string) string {
	if len(path) == 0 {
		return "the root module"
	}
	return moduleAddr(path)
}

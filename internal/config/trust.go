package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/mirror"
)

var trustSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "key_ids"}, {Name: "unsigned"}, {Name: "expired_keys"}, {Name: "key_change"}, {Name: "accept_new_keys"}},
}

// decodeTrust reads a trust "PATTERN" block into the policy. PATTERN is
// "*" for every provider, "[host/]namespace/*" for a namespace or
// "[host/]namespace/type" for one provider.
func decodeTrust(block *hcl.Block, policy *mirror.TrustPolicy, seen map[string]hcl.Range) hcl.Diagnostics {
	rule, diags := patternBlock(block, seen)
	if diags.HasErrors() {
		return diags
	}
	content, diags := block.Body.Content(trustSchema)
	if diags.HasErrors() {
		return diags
	}
	diags = append(diags, decodeKeyIDs(content, "key_ids", &rule.KeyIDs)...)
	diags = append(diags, decodeKeyIDs(content, "accept_new_keys", &rule.AcceptNewKeys)...)
	diags = append(diags, acceptableKeys(content, rule)...)
	var ds hcl.Diagnostics
	rule.RefuseUnsigned, ds = decodeChoice(content, "unsigned", "allow", "refuse")
	diags = append(diags, ds...)
	rule.RefuseExpired, ds = decodeChoice(content, "expired_keys", "warn", "refuse")
	diags = append(diags, ds...)
	rule.RefuseKeyChange, ds = decodeChoice(content, "key_change", "warn", "refuse")
	diags = append(diags, ds...)
	if rule.Namespace == "" {
		policy.Default = rule
	} else {
		policy.Rules = append(policy.Rules, rule)
	}
	return diags
}

// patternBlock reads the provider pattern that labels a trust or
// vulnerabilities block, and refuses a second block of that type for the
// same pattern (seen holds those read so far).
func patternBlock(block *hcl.Block, seen map[string]hcl.Range) (mirror.TrustRule, hcl.Diagnostics) {
	sel, err := trustSelector(block.Labels[0])
	if err != nil {
		return sel, errAt(block.LabelRanges[0], "Invalid "+block.Type+" pattern", err.Error())
	}
	key := fmt.Sprintf("%s/%s/%s", sel.Hostname, sel.Namespace, sel.Type)
	if prev, dup := seen[key]; dup {
		return sel, errAt(block.DefRange, "Duplicate "+block.Type+" block",
			fmt.Sprintf("These providers already have a %s block at %s:%d:%d.", block.Type, prev.Filename, prev.Start.Line, prev.Start.Column))
	}
	seen[key] = block.DefRange
	return sel, nil
}

func trustSelector(pattern string) (mirror.TrustRule, error) {
	if pattern == "*" || pattern == "*/*/*" {
		return mirror.TrustRule{}, nil
	}
	parts := strings.Split(pattern, "/")
	typ := parts[len(parts)-1]
	probe := strings.Join(append(parts[:len(parts)-1:len(parts)-1], "x"), "/")
	if typ != "*" {
		probe = pattern
	}
	p, err := addrs.ParseProvider(probe)
	if err != nil || len(parts) < 2 || strings.Contains(probe, "*") {
		return mirror.TrustRule{}, fmt.Errorf(`%q is not "*", "[host/]namespace/*" or "[host/]namespace/type"`, pattern)
	}
	if typ != "*" {
		typ = p.Type
	}
	return mirror.TrustRule{Hostname: p.Hostname, Namespace: p.Namespace, Type: typ}, nil
}

// decodeKeyIDs reads a list of key IDs and fingerprints (attribute name)
// into ids.
func decodeKeyIDs(content *hcl.BodyContent, name string, ids *[]string) hcl.Diagnostics {
	attr, ok := content.Attributes[name]
	if !ok {
		return nil
	}
	var list []string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &list); diags.HasErrors() {
		return diags
	}
	for _, id := range list {
		if !mirror.ValidKeyID(id) {
			return errAt(attr.Expr.Range(), "Invalid key ID",
				fmt.Sprintf("%q is neither a 16-digit OpenPGP key ID nor a 40-digit fingerprint.", id))
		}
	}
	if len(list) == 0 && name == "key_ids" {
		return errAt(attr.Expr.Range(), "Invalid key IDs", "An empty list would refuse every signature; remove key_ids to allow any advertised key.")
	}
	*ids = list
	return nil
}

// acceptableKeys refuses a key accept_new_keys names that key_ids (when
// set) does not allow: it could never sign a release the rule accepts.
func acceptableKeys(content *hcl.BodyContent, rule mirror.TrustRule) hcl.Diagnostics {
	if len(rule.KeyIDs) == 0 {
		return nil
	}
	for _, id := range rule.AcceptNewKeys {
		if !slices.ContainsFunc(rule.KeyIDs, func(k string) bool { return sameKey(k, id) }) {
			return errAt(content.Attributes["accept_new_keys"].Expr.Range(), "Key not allowed",
				fmt.Sprintf("accept_new_keys names %s, which key_ids does not list: add it to key_ids too, or it can never sign a release this rule accepts.", id))
		}
	}
	return nil
}

// sameKey says whether two key IDs or fingerprints name the same key: a
// key ID is the last 16 digits of its fingerprint.
func sameKey(a, b string) bool {
	a, b = strings.ToUpper(a), strings.ToUpper(b)
	return strings.HasSuffix(a, b) || strings.HasSuffix(b, a)
}

// decodeChoice reads an attribute that is one of two words; the result is
// nil when absent, else whether it is the second ("refuse") word.
func decodeChoice(content *hcl.BodyContent, name, allow, refuse string) (*bool, hcl.Diagnostics) {
	attr, ok := content.Attributes[name]
	if !ok {
		return nil, nil
	}
	var v string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &v); diags.HasErrors() {
		return nil, diags
	}
	if v != allow && v != refuse {
		return nil, errAt(attr.Expr.Range(), "Invalid "+name, fmt.Sprintf("%s must be %q or %q.", name, allow, refuse))
	}
	b := v == refuse
	return &b, nil
}

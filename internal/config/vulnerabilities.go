package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"

	"github.com/tfmirror/tfmirror/mirror"
)

var vulnerabilitiesSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "action"}, {Name: "ignore"}},
}

// advisoryID is what an advisory id or alias in an ignore map may look
// like: GO-2022-1059, CVE-2022-32149, GHSA-69ch-w2m2-3vjp.
var advisoryID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)+$`)

// decodeVulnerabilities reads a vulnerabilities "PATTERN" block into the
// policy; PATTERN selects providers as a trust block's does.
func decodeVulnerabilities(block *hcl.Block, policy **mirror.AdvisoryPolicy, seen map[string]hcl.Range) hcl.Diagnostics {
	sel, diags := patternBlock(block, seen)
	if diags.HasErrors() {
		return diags
	}
	content, diags := block.Body.Content(vulnerabilitiesSchema)
	if diags.HasErrors() {
		return diags
	}
	rule := mirror.AdvisoryRule{Hostname: sel.Hostname, Namespace: sel.Namespace, Type: sel.Type}
	if attr, ok := content.Attributes["action"]; ok {
		action, ds := decodeAction(attr)
		if ds.HasErrors() {
			return ds
		}
		rule.Action = &action
	}
	if attr, ok := content.Attributes["ignore"]; ok {
		if ds := decodeIgnore(attr, &rule); ds.HasErrors() {
			return ds
		}
	}
	if *policy == nil {
		*policy = &mirror.AdvisoryPolicy{}
	}
	if rule.Namespace == "" {
		(*policy).Default = rule
	} else {
		(*policy).Rules = append((*policy).Rules, rule)
	}
	return nil
}

func decodeAction(attr *hcl.Attribute) (mirror.AdvisoryAction, hcl.Diagnostics) {
	var v string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &v); diags.HasErrors() {
		return 0, diags
	}
	for _, a := range []mirror.AdvisoryAction{mirror.AdvisoryWarn, mirror.AdvisoryHold, mirror.AdvisoryRefuse} {
		if v == a.String() {
			return a, nil
		}
	}
	return 0, errAt(attr.Expr.Range(), "Invalid action", `action must be "warn", "hold" or "refuse".`)
}

// decodeIgnore reads ignore = { "GO-2022-1059" = "why" }: every advisory
// ignored says why.
func decodeIgnore(attr *hcl.Attribute, rule *mirror.AdvisoryRule) hcl.Diagnostics {
	var ignore map[string]string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &ignore); diags.HasErrors() {
		return diags
	}
	for id, why := range ignore {
		switch {
		case !advisoryID.MatchString(id):
			return errAt(attr.Expr.Range(), "Invalid advisory id", fmt.Sprintf("%q is not an advisory id such as GO-2022-1059, CVE-2022-32149 or GHSA-69ch-w2m2-3vjp.", id))
		case strings.TrimSpace(why) == "":
			return errAt(attr.Expr.Range(), "Ignored advisory without a reason", fmt.Sprintf("Say why %s is ignored: ignore = { %q = \"the reason\" }.", id, id))
		}
	}
	rule.Ignore = ignore
	return nil
}

// decodeVulnDB reads the top-level vulndb attribute: a directory or zip
// relative to the manifest, or an https:// URL, kept as written.
func decodeVulnDB(attr *hcl.Attribute, dir string) (string, hcl.Diagnostics) {
	var v string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &v); diags.HasErrors() {
		return "", diags
	}
	switch {
	case v == "":
		return "", errAt(attr.Expr.Range(), "Invalid vulndb", "vulndb names a directory, an OSV zip or an https:// URL.")
	case strings.HasPrefix(strings.ToLower(v), "https://"):
		return v, nil
	case strings.Contains(v, "://"):
		return "", errAt(attr.Expr.Range(), "Invalid vulndb", "A served vulnerability database is read over https:// only; or name a directory or an OSV zip.")
	case !filepath.IsAbs(v):
		v = filepath.Join(dir, v)
	}
	return v, existingFile(attr, "vulndb", v)
}

// existingFile refuses, at the attribute, a file or directory it names
// that is not there (or cannot be read): the manifest's mistake, said
// where it is, before any command needs the file.
func existingFile(attr *hcl.Attribute, name, path string) hcl.Diagnostics {
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return errAt(attr.Expr.Range(), "Unreadable "+name, fmt.Sprintf("%s names %s, which cannot be read: %v.", name, path, err))
	}
	return nil
}

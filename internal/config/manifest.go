package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/hclsafe"
	"github.com/tfmirror/tfmirror/mirror"
)

// Manifest is a parsed and validated mirror.hcl.
type Manifest struct {
	Requirements []mirror.Requirement
	// Modules are the module blocks' requirements, sorted by address.
	Modules []mirror.ModuleRequirement
	// Platforms is the top-level platforms list, for configurations.
	Platforms []addrs.Platform
	// Configurations are the root module directories that configuration
	// blocks name, globs expanded, as absolute paths in sorted order.
	Configurations []string
	// Services overrides service discovery per host, as a CLI-config host block.
	Services map[addrs.Hostname]map[string]string
	// Tokens are registry credentials from credentials blocks.
	Tokens map[addrs.Hostname]string
	// TokensFrom are the credentials blocks' for_locations_from: for a
	// host, the registries whose locations on it may carry its token.
	TokensFrom map[addrs.Hostname][]string
	// Trust is the signature policy from trust blocks.
	Trust mirror.TrustPolicy
	// Settings are the settings block's values.
	Settings Settings
	// ClientCertificates are the client_certificate blocks: what to present
	// to each host that requires mutual TLS.
	ClientCertificates map[addrs.Hostname]ClientCertificate
	// Upstreams are the provider_installation block's methods, in order:
	// where each provider comes from; none means the origin registries.
	Upstreams []Upstream
	// MinAge is the top-level min_age: the cool-down of blocks that set
	// none, and of configurations' providers and modules.
	MinAge time.Duration
	// Outs are the out attribute's destinations, for a build given no --out:
	// directories as absolute paths, other destinations as written.
	Outs []string
	// VulnDB is the vulndb attribute: the vulnerability database
	// (--vulndb wins), a path made absolute or an https:// URL.
	VulnDB string
	// Advisories is the vulnerabilities blocks' policy; nil when the
	// manifest has none.
	Advisories *mirror.AdvisoryPolicy
}

var rootSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "platforms"}, {Name: "out"}, {Name: "min_age"}, {Name: "vulndb"}},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "provider", LabelNames: []string{"source"}},
		{Type: "module", LabelNames: []string{"source"}},
		{Type: "host", LabelNames: []string{"hostname"}},
		{Type: "credentials", LabelNames: []string{"hostname"}},
		{Type: "configuration", LabelNames: []string{"path"}},
		{Type: "trust", LabelNames: []string{"pattern"}},
		{Type: "vulnerabilities", LabelNames: []string{"pattern"}},
		{Type: "settings"},
		{Type: "provider_installation"},
		{Type: "client_certificate", LabelNames: []string{"hostname"}},
	},
}

// Load reads and validates the manifest at path. Problems are returned as
// an *Error that lists each one with its position; so is a manifest that is
// not a regular file or is larger than hclsafe.MaxManifestSize. A missing
// file is an error that matches fs.ErrNotExist.
func Load(path string) (*Manifest, error) {
	src, err := hclsafe.ReadFile(path, hclsafe.MaxManifestSize)
	if e, ok := hclsafe.As(err); ok {
		return nil, refused(e)
	}
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	return Parse(src, path)
}

// Parse validates manifest source; filename is used in messages. Source
// nested deeper than hclsafe.MaxDepth is refused before HCL reads it.
func Parse(src []byte, filename string) (*Manifest, error) {
	if err := hclsafe.CheckDepth(src, filename, hclsafe.Native); err != nil {
		e, _ := hclsafe.As(err)
		return nil, refused(e)
	}
	p := hclparse.NewParser()
	file, diags := p.ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, newError(diags, p.Files())
	}
	m, diags := decode(file.Body, filepath.Dir(filename))
	if diags.HasErrors() {
		return nil, newError(diags, p.Files())
	}
	return m, nil
}

// decode validates the manifest; dir is the manifest's directory, against
// which configuration paths resolve.
func decode(body hcl.Body, dir string) (*Manifest, hcl.Diagnostics) {
	content, diags := body.Content(rootSchema)
	m := &Manifest{
		Services: make(map[addrs.Hostname]map[string]string),
		Tokens:   make(map[addrs.Hostname]string),

		TokensFrom: make(map[addrs.Hostname][]string),

		ClientCertificates: make(map[addrs.Hostname]ClientCertificate),
	}
	var defaults []addrs.Platform
	_, platformsSet := content.Attributes["platforms"]
	if attr, ok := content.Attributes["platforms"]; ok {
		var ds hcl.Diagnostics
		defaults, ds = decodePlatforms(attr)
		diags = append(diags, ds...)
	}
	m.Platforms = defaults
	if age, ds := decodeAge(content); ds.HasErrors() {
		diags = append(diags, ds...)
	} else if age != nil {
		m.MinAge = *age
	}
	if attr, ok := content.Attributes["out"]; ok {
		var ds hcl.Diagnostics
		m.Outs, ds = decodeOut(attr, dir)
		diags = append(diags, ds...)
	}
	if attr, ok := content.Attributes["vulndb"]; ok {
		var ds hcl.Diagnostics
		m.VulnDB, ds = decodeVulnDB(attr, dir)
		diags = append(diags, ds...)
	}
	seen := make(map[string]hcl.Range)
	trustSeen := make(map[string]hcl.Range)
	vulnSeen := make(map[string]hcl.Range)
	settingsSeen := false
	for _, block := range content.Blocks {
		switch block.Type {
		case "provider":
			req, ds := decodeProvider(block, defaults, platformsSet, seen)
			diags = append(diags, ds...)
			if !ds.HasErrors() {
				m.Requirements = append(m.Requirements, req)
			}
		case "module":
			req, ds := decodeModule(block, seen)
			diags = append(diags, ds...)
			if !ds.HasErrors() {
				m.Modules = append(m.Modules, req)
			}
		case "host":
			diags = append(diags, decodeHost(block, m.Services)...)
		case "credentials":
			diags = append(diags, decodeCredentials(block, m.Tokens, m.TokensFrom)...)
		case "settings":
			diags = append(diags, decodeSettings(block, dir, &m.Settings, &settingsSeen)...)
		case "trust":
			diags = append(diags, decodeTrust(block, &m.Trust, trustSeen)...)
		case "vulnerabilities":
			diags = append(diags, decodeVulnerabilities(block, &m.Advisories, vulnSeen)...)
		case "client_certificate":
			diags = append(diags, decodeClientCertificate(block, dir, m.ClientCertificates)...)
		case "provider_installation":
			if m.Upstreams != nil {
				diags = append(diags, duplicate(block, "provider_installation", "")...)
				continue
			}
			ups, ds := decodeInstallation(block, dir)
			diags = append(diags, ds...)
			m.Upstreams = append([]Upstream{}, ups...)
		case "configuration":
			dirs, ds := decodeConfiguration(block, dir)
			diags = append(diags, ds...)
			m.Configurations = append(m.Configurations, dirs...)
		}
	}
	slices.Sort(m.Configurations)
	m.Configurations = slices.Compact(m.Configurations)
	sort.SliceStable(m.Requirements, func(i, j int) bool {
		return m.Requirements[i].Provider.LessThan(m.Requirements[j].Provider)
	})
	for i := range m.Requirements {
		if m.Requirements[i].MinAge < 0 {
			m.Requirements[i].MinAge = m.MinAge
		}
	}
	for i := range m.Modules {
		if m.Modules[i].MinAge < 0 {
			m.Modules[i].MinAge = m.MinAge
		}
	}
	sort.SliceStable(m.Modules, func(i, j int) bool {
		return m.Modules[i].Module.String() < m.Modules[j].Module.String()
	})
	return m, diags
}

// decodeConfiguration expands a configuration block's path or glob,
// relative to the manifest, into root module directories.
func decodeConfiguration(block *hcl.Block, dir string) ([]string, hcl.Diagnostics) {
	if _, diags := block.Body.Content(&hcl.BodySchema{}); diags.HasErrors() {
		return nil, diags
	}
	pattern := block.Labels[0]
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(dir, pattern)
	}
	matches, err := filepath.Glob(pattern)
	if err != nil {
		return nil, errAt(block.LabelRanges[0], "Invalid configuration path", err.Error())
	}
	var dirs []string
	for _, m := range matches {
		if hiddenFromGlob(pattern, m) {
			continue
		}
		if info, err := os.Stat(m); err == nil && info.IsDir() {
			abs, err := filepath.Abs(m)
			if err != nil {
				return nil, errAt(block.LabelRanges[0], "Invalid configuration path", err.Error())
			}
			dirs = append(dirs, abs)
		}
	}
	if len(dirs) == 0 {
		return nil, errAt(block.LabelRanges[0], "No configuration found",
			fmt.Sprintf("%q matches no directory (paths are relative to the manifest).", block.Labels[0]))
	}
	return dirs, nil
}

// hiddenFromGlob reports whether match, which pattern matched, reaches a
// name that starts with a dot through a wildcard: the shell leaves such
// names out (live/* is not live/.terraform), and so do configuration
// blocks, unless the pattern's own part starts with a dot.
func hiddenFromGlob(pattern, match string) bool {
	pp := strings.Split(filepath.Clean(pattern), string(filepath.Separator))
	mp := strings.Split(filepath.Clean(match), string(filepath.Separator))
	if len(pp) != len(mp) {
		return false
	}
	for i, part := range pp {
		if strings.HasPrefix(mp[i], ".") && !strings.HasPrefix(part, ".") && strings.ContainsAny(part, `*?[\`) {
			return true
		}
	}
	return false
}

func decodeHost(block *hcl.Block, services map[addrs.Hostname]map[string]string) hcl.Diagnostics {
	host, diags := hostLabel(block)
	if diags.HasErrors() {
		return diags
	}
	content, ds := block.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "services", Required: true}}})
	if ds.HasErrors() {
		return ds
	}
	var svc map[string]string
	ds = gohcl.DecodeExpression(content.Attributes["services"].Expr, nil, &svc)
	if ds.HasErrors() {
		return ds
	}
	if _, dup := services[host]; dup {
		return duplicate(block, "host", string(host))
	}
	services[host] = svc
	return nil
}

// decodeCredentials reads a credentials block: a token, and the
// registries whose locations on the host may carry it
// (for_locations_from). The token may be left to a TF_TOKEN_ variable
// when for_locations_from is set.
func decodeCredentials(block *hcl.Block, tokens map[addrs.Hostname]string, from map[addrs.Hostname][]string) hcl.Diagnostics {
	host, diags := hostLabel(block)
	if diags.HasErrors() {
		return diags
	}
	content, ds := block.Body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "token"}, {Name: "for_locations_from"}}})
	if ds.HasErrors() {
		return ds
	}
	_, seen := tokens[host]
	if _, seenFrom := from[host]; seen || seenFrom {
		return duplicate(block, "credentials", string(host))
	}
	if attr, ok := content.Attributes["for_locations_from"]; ok {
		registries, ds := decodeLocationsFrom(attr)
		if ds.HasErrors() {
			return ds
		}
		from[host] = registries
	}
	attr, ok := content.Attributes["token"]
	if !ok {
		if _, ok := from[host]; ok {
			return nil // the token comes from TF_TOKEN_*
		}
		return errAt(block.Body.MissingItemRange(), "Missing token", fmt.Sprintf("The credentials block for %q needs a token (or, with the token in a TF_TOKEN_ variable, for_locations_from alone).", host.ForDisplay()))
	}
	var token string
	if ds := gohcl.DecodeExpression(attr.Expr, nil, &token); ds.HasErrors() {
		return ds
	}
	tokens[host] = token
	return nil
}

func hostLabel(block *hcl.Block) (addrs.Hostname, hcl.Diagnostics) {
	host, err := svchost.ForComparison(block.Labels[0])
	if err != nil {
		return "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Invalid hostname",
			Detail:   fmt.Sprintf("%q is not a valid hostname: %s.", block.Labels[0], err),
			Subject:  block.LabelRanges[0].Ptr(),
		}}
	}
	return host, nil
}

func duplicate(block *hcl.Block, kind, name string) hcl.Diagnostics {
	return hcl.Diagnostics{{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("Duplicate %s block", kind),
		Detail:   fmt.Sprintf("%s %q is configured more than once.", kind, name),
		Subject:  block.DefRange.Ptr(),
	}}
}

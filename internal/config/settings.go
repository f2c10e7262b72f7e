package config

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"github.com/tfmirror/tfmirror/internal/size"
)

// Settings are the manifest's settings block. Nil fields are not set;
// command-line flags win over them.
type Settings struct {
	Retries           *int
	ConnectTimeout    *time.Duration
	HeaderTimeout     *time.Duration
	StallTimeout      *time.Duration
	MaxArchiveEntries *int
	MaxUnpackedBytes  *int64
	// SpeedLimit (bytes a second) and SpeedTime: a transfer slower than
	// that over SpeedTime is abandoned and retried (httpx.Policy).
	SpeedLimit *int64
	SpeedTime  *time.Duration
	// MaxArchiveBytes caps every download (httpx.Policy.MaxBodyBytes).
	MaxArchiveBytes *int64
	// MaxModuleDepth, MaxModules and MaxModuleCalls bound the module tree
	// a build follows (mirror.ModuleTreeLimits).
	MaxModuleDepth *int
	MaxModules     *int
	MaxModuleCalls *int
	// AllowedLocationHosts are hosts ("host" or "host:port") on which a
	// registry or mirror may name locations whatever their scheme and
	// address (httpx.Locations.Allowed).
	AllowedLocationHosts []string
	// OCITokenRealms are, per OCI registry host, the hosts of token
	// services on another host or port that may receive its credentials.
	OCITokenRealms map[string][]string
	// MaxListPages, MaxBucketObjects and MaxRepositoryTags bound one
	// paginated listing (settings.ListLimits).
	MaxListPages      *int
	MaxBucketObjects  *int
	MaxRepositoryTags *int
	// CatalogKey is the file (relative to the manifest) of the public
	// keys whose signature of a mirror's catalog.json verify checks and
	// lock trusts, as --catalog-key, which wins.
	CatalogKey string
}

var settingsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "retries"}, {Name: "connect_timeout"}, {Name: "header_timeout"}, {Name: "stall_timeout"},
		{Name: "max_archive_entries"}, {Name: "max_unpacked_bytes"},
		{Name: "speed_limit"}, {Name: "speed_time"}, {Name: "max_archive_bytes"},
		{Name: "max_module_depth"}, {Name: "max_modules"}, {Name: "max_module_calls"},
		{Name: "allowed_location_hosts"}, {Name: "oci_token_realms"},
		{Name: "max_list_pages"}, {Name: "max_bucket_objects"}, {Name: "max_repository_tags"},
		{Name: "catalog_key"},
	},
}

func decodeSettings(block *hcl.Block, dir string, s *Settings, seen *bool) hcl.Diagnostics {
	if *seen {
		return errAt(block.DefRange, "Duplicate settings block", "The manifest may have one settings block.")
	}
	*seen = true
	content, diags := block.Body.Content(settingsSchema)
	if diags.HasErrors() {
		return diags
	}
	var ds hcl.Diagnostics
	s.Retries, ds = decodeCount(content, "retries", 0)
	diags = append(diags, ds...)
	s.MaxArchiveEntries, ds = decodeCount(content, "max_archive_entries", 1)
	diags = append(diags, ds...)
	for name, dst := range map[string]**int{
		"max_module_depth": &s.MaxModuleDepth, "max_modules": &s.MaxModules, "max_module_calls": &s.MaxModuleCalls,
		"max_list_pages": &s.MaxListPages, "max_bucket_objects": &s.MaxBucketObjects, "max_repository_tags": &s.MaxRepositoryTags,
	} {
		*dst, ds = decodeCount(content, name, 1)
		diags = append(diags, ds...)
	}
	for name, c := range map[string]struct {
		dst   **int64
		least int
	}{
		"max_unpacked_bytes": {&s.MaxUnpackedBytes, 1},
		"speed_limit":        {&s.SpeedLimit, 0}, // 0: no limit
		"max_archive_bytes":  {&s.MaxArchiveBytes, 0},
	} {
		*c.dst, ds = decodeBytes(content, name, c.least)
		diags = append(diags, ds...)
	}
	if attr, ok := content.Attributes["allowed_location_hosts"]; ok {
		s.AllowedLocationHosts, ds = decodeHostPatterns(attr)
		diags = append(diags, ds...)
	}
	if attr, ok := content.Attributes["oci_token_realms"]; ok {
		s.OCITokenRealms, ds = decodeTokenRealms(attr)
		diags = append(diags, ds...)
	}
	if attr, ok := content.Attributes["catalog_key"]; ok {
		diags = append(diags, gohcl.DecodeExpression(attr.Expr, nil, &s.CatalogKey)...)
		if s.CatalogKey != "" && !filepath.IsAbs(s.CatalogKey) {
			s.CatalogKey = filepath.Join(dir, s.CatalogKey)
		}
		diags = append(diags, existingFile(attr, "catalog_key", s.CatalogKey)...)
	}
	for name, dst := range map[string]**time.Duration{
		"connect_timeout": &s.ConnectTimeout, "header_timeout": &s.HeaderTimeout, "stall_timeout": &s.StallTimeout,
		"speed_time": &s.SpeedTime,
	} {
		*dst, ds = decodeDuration(content, name)
		diags = append(diags, ds...)
	}
	return diags
}

func decodeCount(content *hcl.BodyContent, name string, least int) (*int, hcl.Diagnostics) {
	attr, ok := content.Attributes[name]
	if !ok {
		return nil, nil
	}
	var n int
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &n); diags.HasErrors() {
		return nil, diags
	}
	if n < least {
		return nil, errAt(attr.Expr.Range(), "Invalid "+name, fmt.Sprintf("%s must be at least %d.", name, least))
	}
	return &n, nil
}

// decodeBytes is decodeCount for a size (or a size a second): a number of
// bytes, or a string with a unit ("500MB", "1GiB"), as the flags take.
func decodeBytes(content *hcl.BodyContent, name string, least int) (*int64, hcl.Diagnostics) {
	attr, ok := content.Attributes[name]
	if !ok {
		return nil, nil
	}
	var raw cty.Value
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	var v int64
	switch {
	case raw.Type() == cty.String && raw.IsKnown() && !raw.IsNull():
		n, err := size.Parse(raw.AsString())
		if err != nil {
			return nil, errAt(attr.Expr.Range(), "Invalid "+name, err.Error())
		}
		v = n
	default:
		n, diags := decodeCount(content, name, least)
		if n == nil {
			return nil, diags
		}
		v = int64(*n)
	}
	if v < int64(least) {
		return nil, errAt(attr.Expr.Range(), "Invalid "+name, fmt.Sprintf("%s must be at least %d.", name, least))
	}
	return &v, nil
}

func decodeDuration(content *hcl.BodyContent, name string) (*time.Duration, hcl.Diagnostics) {
	attr, ok := content.Attributes[name]
	if !ok {
		return nil, nil
	}
	var raw string
	if diags := gohcl.DecodeExpression(attr.Expr, nil, &raw); diags.HasErrors() {
		return nil, diags
	}
	d, err := time.ParseDuration(raw)
	if err != nil || d < 0 {
		return nil, errAt(attr.Expr.Range(), "Invalid "+name, fmt.Sprintf("%q is not a duration such as \"30s\" or \"2m\" (0 means no limit).", raw))
	}
	return &d, nil
}

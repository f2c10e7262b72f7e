package config

import (
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
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
}

var settingsSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "retries"}, {Name: "connect_timeout"}, {Name: "header_timeout"}, {Name: "stall_timeout"},
		{Name: "max_archive_entries"}, {Name: "max_unpacked_bytes"},
	},
}

func decodeSettings(block *hcl.Block, s *Settings, seen *bool) hcl.Diagnostics {
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
	if n, d := decodeCount(content, "max_unpacked_bytes", 1); n != nil {
		v := int64(*n)
		s.MaxUnpackedBytes = &v
	} else {
		diags = append(diags, d...)
	}
	for name, dst := range map[string]**time.Duration{
		"connect_timeout": &s.ConnectTimeout, "header_timeout": &s.HeaderTimeout, "stall_timeout": &s.StallTimeout,
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

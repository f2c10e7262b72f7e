package config_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
)

// The vulnerabilities blocks: the most specific block's action wins,
// the ignore maps add up; vulndb is made absolute against the manifest,
// a URL kept; no block, no policy.
func TestVulnerabilitiesBlocks(t *testing.T) {
	src := `vulndb = "vulndb/data/osv"

vulnerabilities "*" {
  action = "warn"
  ignore = { "GO-2022-1059" = "only reached from tests" }
}
vulnerabilities "hashicorp/*" {
  action = "hold"
}
vulnerabilities "example.com/acme/tool" {
  action = "refuse"
  ignore = { "CVE-2021-38561" = "the provider never parses language tags" }
}
`
	m, err := config.Parse([]byte(src), filepath.Join("/srv", "mirror.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if m.VulnDB != filepath.Join("/srv", "vulndb/data/osv") {
		t.Errorf("vulndb %q", m.VulnDB)
	}
	for addr, want := range map[string]string{
		"hashicorp/aws":         "hold [GO-2022-1059]",
		"example.com/acme/tool": "refuse [CVE-2021-38561 GO-2022-1059]",
		"example.com/acme/else": "warn [GO-2022-1059]",
	} {
		pol := m.Advisories.For(addrs.MustParseProvider(addr))
		var ids []string
		for id := range pol.Ignore {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if got := fmt.Sprintf("%s %v", pol.Action, ids); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
	m, err = config.Parse([]byte(`vulndb = "https://vuln.go.dev"`), "mirror.hcl")
	if err != nil || m.VulnDB != "https://vuln.go.dev" || m.Advisories != nil {
		t.Errorf("vulndb %q, policy %v (%v)", m.VulnDB, m.Advisories, err)
	}
}

func TestVulnerabilitiesBlockErrors(t *testing.T) {
	tests := map[string]string{
		`vulnerabilities "nope" {}`:                                `mirror.hcl:1:17: Invalid vulnerabilities pattern`,
		`vulnerabilities "*" { action = "block" }`:                 `mirror.hcl:1:32: Invalid action: action must be "warn", "hold" or "refuse".`,
		`vulnerabilities "*" { ignore = { "GO-2022-1059" = "" } }`: `Ignored advisory without a reason`,
		`vulnerabilities "*" { ignore = { "../x" = "why" } }`:      `Invalid advisory id`,
		`vulnerabilities "*" { severity = "high" }`:                `Unsupported argument`,
		"vulnerabilities \"a/*\" {}\nvulnerabilities \"a/*\" {}":   `mirror.hcl:2:1: Duplicate vulnerabilities block`,
		`vulndb = ""`: `Invalid vulndb`,
	}
	for src, want := range tests {
		_, err := config.Parse([]byte(src), "mirror.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n  err = %v\n  want %q", src, err, want)
		}
	}
}

package config_test

import (
	"fmt"
	"os"
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
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "vulndb", "data", "osv"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := config.Parse([]byte(src), filepath.Join(dir, "mirror.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if m.VulnDB != filepath.Join(dir, "vulndb/data/osv") {
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

// A vulndb or catalog_key the manifest names that is not there, or a
// database over plain http://, is the manifest's mistake, said at its
// line, as check finds it.
func TestManifestFilesMustExist(t *testing.T) {
	dir := t.TempDir()
	for src, want := range map[string]string{
		`vulndb = "nothere/osv"`:                       "mirror.hcl:1:10: Unreadable vulndb",
		`vulndb = "http://127.0.0.1:1/vulndb"`:         "mirror.hcl:1:10: Invalid vulndb",
		"settings {\n  catalog_key = \"nokey.asc\"\n}": "mirror.hcl:2:17: Unreadable catalog_key",
	} {
		_, err := config.Parse([]byte(src), filepath.Join(dir, "mirror.hcl"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

package config_test

import (
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
)

func TestTrustBlocks(t *testing.T) {
	src := `trust "*" {
  unsigned     = "refuse"
  expired_keys = "warn"
}
trust "hashicorp/*" {
  key_ids    = ["34365D9472D7468F"]
  key_change = "refuse"
}
trust "example.com/acme/tool" {
  key_ids         = ["0123456789abcdef0123456789abcdef01234567", "0123456789ABCDEF"]
  expired_keys    = "refuse"
  unsigned        = "allow"
  key_change      = "warn"
  accept_new_keys = ["0123456789ABCDEF"]
}
`
	m, err := config.Parse([]byte(src), "mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[string]string{
		"hashicorp/aws":         "keys=[34365D9472D7468F] expired=false unsigned=true key_change=true accept=[]",
		"example.com/acme/tool": "keys=[0123456789abcdef0123456789abcdef01234567,0123456789ABCDEF] expired=true unsigned=false key_change=false accept=[0123456789ABCDEF]",
		"example.com/acme/else": "keys=[] expired=false unsigned=true key_change=false accept=[]",
	} {
		p, err := addrs.ParseProvider(addr)
		if err != nil {
			t.Fatal(err)
		}
		tr := m.Trust.For(p)
		got := "keys=[" + strings.Join(tr.KeyIDs, ",") + "] expired=" + boolString(tr.RefuseExpired) + " unsigned=" + boolString(tr.RefuseUnsigned) +
			" key_change=" + boolString(tr.RefuseKeyChange) + " accept=[" + strings.Join(tr.AcceptNewKeys, ",") + "]"
		if got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestTrustBlockErrors(t *testing.T) {
	tests := map[string]string{
		`trust "nope" {}`:                         `mirror.hcl:1:7: Invalid trust pattern`,
		`trust "*/*" {}`:                          `mirror.hcl:1:7: Invalid trust pattern`,
		`trust "*" { unsigned = "maybe" }`:        `mirror.hcl:1:24: Invalid unsigned: unsigned must be "allow" or "refuse".`,
		`trust "*" { expired_keys = "ignore" }`:   `mirror.hcl:1:28: Invalid expired_keys`,
		`trust "*" { key_ids = ["XYZ"] }`:         `mirror.hcl:1:23: Invalid key ID`,
		`trust "*" { key_ids = [] }`:              `mirror.hcl:1:23: Invalid key IDs`,
		`trust "*" { key_change = "ignore" }`:     `mirror.hcl:1:26: Invalid key_change: key_change must be "warn" or "refuse".`,
		`trust "*" { accept_new_keys = ["ABC"] }`: `mirror.hcl:1:31: Invalid key ID`,
		`trust "*" { colour = "blue" }`:           `mirror.hcl:1:13: Unsupported argument`,
		"trust \"*\" {\n  key_ids = [\"5BEBA8D7578C6669\"]\n  accept_new_keys = [\"1111111111111111\"]\n}": `mirror.hcl:3:21: Key not allowed`,
		"trust \"a/*\" {}\ntrust \"registry.opentofu.org/a/*\" {}":                                         `mirror.hcl:2:1: Duplicate trust block`,
	}
	for src, want := range tests {
		_, err := config.Parse([]byte(src), "mirror.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s\n  err = %v\n  want %q", src, err, want)
		}
	}
}

package config_test

import (
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/config"
	"github.com/tfmirror/tfmirror/internal/httpx"
	"github.com/tfmirror/tfmirror/internal/settings"
)

// RequestPolicy: defaults, then the manifest, then the flags given.
func TestRequestPolicyPrecedence(t *testing.T) {
	m, err := config.Parse([]byte("settings {\n  speed_limit = 2048\n  speed_time = \"45s\"\n  max_archive_bytes = 4096\n  retries = 1\n}\n"), "mirror.hcl")
	if err != nil {
		t.Fatal(err)
	}
	flags := httpx.DefaultPolicy()
	flags.SpeedLimit, flags.SpeedTime, flags.MaxBodyBytes, flags.Retries = 1, time.Second, 7, 9

	def := config.Settings{}.NetworkPolicy(flags, nil)
	if d := httpx.DefaultPolicy(); def != d {
		t.Errorf("without settings or flags: %+v, want the defaults %+v", def, d)
	}
	p := m.Settings.NetworkPolicy(flags, nil)
	if p.SpeedLimit != 2048 || p.SpeedTime != 45*time.Second || p.MaxBodyBytes != 4096 || p.Retries != 1 {
		t.Errorf("manifest: %+v", p)
	}
	set := map[string]bool{}
	for _, f := range settings.NetworkFlags {
		set[f] = true
	}
	p = m.Settings.NetworkPolicy(flags, set)
	if p.SpeedLimit != 1 || p.SpeedTime != time.Second || p.MaxBodyBytes != 7 || p.Retries != 9 {
		t.Errorf("flags: %+v", p)
	}
}

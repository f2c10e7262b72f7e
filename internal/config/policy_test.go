package config

import (
	"testing"
	"time"

	"github.com/tfmirror/tfmirror/internal/httpx"
)

func TestNetworkPolicyPrecedence(t *testing.T) {
	retries, stall := 9, 5*time.Second
	manifest := Settings{Retries: &retries, StallTimeout: &stall}
	flags := httpx.Policy{Retries: 1, StallTimeout: time.Second, ConnectTimeout: time.Hour}
	p := manifest.NetworkPolicy(flags, map[string]bool{"retries": true})
	def := httpx.DefaultPolicy()
	if p.Retries != 1 {
		t.Errorf("retries = %d, want the flag's 1", p.Retries)
	}
	if p.StallTimeout != stall {
		t.Errorf("stall timeout = %s, want the manifest's %s", p.StallTimeout, stall)
	}
	if p.ConnectTimeout != def.ConnectTimeout {
		t.Errorf("connect timeout = %s, want the default %s (the flag was not given)", p.ConnectTimeout, def.ConnectTimeout)
	}
}

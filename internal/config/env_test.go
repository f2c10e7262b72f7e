package config_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/config"
)

func TestTokensFromEnv(t *testing.T) {
	tests := []struct {
		env  string
		want map[addrs.Hostname]string
	}{
		{"TF_TOKEN_example_com=abc", map[addrs.Hostname]string{"example.com": "abc"}},
		{"TF_TOKEN_my__registry_example_com=abc", map[addrs.Hostname]string{"my-registry.example.com": "abc"}},
		{"TF_TOKEN_a__b__c_example_com=abc", map[addrs.Hostname]string{"a-b-c.example.com": "abc"}},
		// café.fr: punycode with escapes, punycode with dots, Unicode.
		{"TF_TOKEN_xn____caf__dma_fr=abc", map[addrs.Hostname]string{"xn--caf-dma.fr": "abc"}},
		{"TF_TOKEN_xn--caf-dma_fr=abc", map[addrs.Hostname]string{"xn--caf-dma.fr": "abc"}},
		{"TF_TOKEN_xn--caf-dma.fr=abc", map[addrs.Hostname]string{"xn--caf-dma.fr": "abc"}},
		{"TF_TOKEN_café_fr=abc", map[addrs.Hostname]string{"xn--caf-dma.fr": "abc"}},
		// Hostnames are case-folded; a port needs a literal colon.
		{"TF_TOKEN_Example_COM=abc", map[addrs.Hostname]string{"example.com": "abc"}},
		{"TF_TOKEN_localhost:8443=abc", map[addrs.Hostname]string{"localhost:8443": "abc"}},
		// The value is everything after the first "=".
		{"TF_TOKEN_example_com=a=b==", map[addrs.Hostname]string{"example.com": "a=b=="}},
		// Empty values are ignored.
		{"TF_TOKEN_example_com=", map[addrs.Hostname]string{}},
		// Garbage names are ignored.
		{"TF_TOKEN_=abc", map[addrs.Hostname]string{}},
		{"TF_TOKEN_not!valid_com=abc", map[addrs.Hostname]string{}},
		{"TF_TOKEN_ex ample_com=abc", map[addrs.Hostname]string{}},
		{"TF_TOKEN_example_com:notaport=abc", map[addrs.Hostname]string{}},
		{"TF_TOKEN_example_com", map[addrs.Hostname]string{}},
		// Other variables are ignored.
		{"HOME=/root", map[addrs.Hostname]string{}},
		{"tf_token_example_com=abc", map[addrs.Hostname]string{}},
		{"XTF_TOKEN_example_com=abc", map[addrs.Hostname]string{}},
		{"TF_TOKENS_example_com=abc", map[addrs.Hostname]string{}},
		{"=abc", map[addrs.Hostname]string{}},
		{"", map[addrs.Hostname]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			got := config.TokensFromEnv([]string{tt.env})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("TokensFromEnv(%q) (-want +got):\n%s", tt.env, diff)
			}
		})
	}
}

func TestTokensFromEnvMany(t *testing.T) {
	got := config.TokensFromEnv([]string{
		"PATH=/usr/bin",
		"TF_TOKEN_example_com=one",
		"TF_TOKEN_other_example_com=two",
		"TF_TOKEN_broken!=x",
		"TF_TOKEN_xn--caf-dma_fr=three",
		"TF_TOKEN_EXAMPLE_COM=four", // same host as the first: the later one wins
	})
	want := map[addrs.Hostname]string{
		"example.com":       "four",
		"other.example.com": "two",
		"xn--caf-dma.fr":    "three",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TokensFromEnv (-want +got):\n%s", diff)
	}
	if got := config.TokensFromEnv(nil); got == nil || len(got) != 0 {
		t.Errorf("TokensFromEnv(nil) = %#v, want an empty map", got)
	}
}

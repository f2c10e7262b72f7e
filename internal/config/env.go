package config

import (
	"strings"

	"github.com/opentofu/svchost"

	"github.com/tfmirror/tfmirror/internal/addrs"
)

// TokensFromEnv reads TF_TOKEN_<host> variables from environ with OpenTofu's
// rules: "__" stands for "-", then "_" for ".", and Unicode or punycode
// hostnames are both accepted. Malformed names are ignored, as OpenTofu does;
// of two variables for one host the later wins, and an empty one is unset,
// as for every variable (environ.Env).
func TokensFromEnv(environ []string) map[addrs.Hostname]string {
	tokens := make(map[addrs.Hostname]string)
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, "TF_TOKEN_") || value == "" {
			continue
		}
		raw := strings.TrimPrefix(name, "TF_TOKEN_")
		raw = strings.ReplaceAll(raw, "__", "-")
		raw = strings.ReplaceAll(raw, "_", ".")
		host, err := svchost.ForComparison(svchost.ForDisplay(raw))
		if err != nil {
			continue
		}
		tokens[host] = value
	}
	return tokens
}

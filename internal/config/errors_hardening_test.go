package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/config"
)

// A manifest error shows the offending source line; a credential on that
// line is masked, whatever the error.
func TestErrorsMaskTokens(t *testing.T) {
	const secret = "s3cr3t-T0KEN"
	tests := []struct {
		name, src, want string
	}{
		{"unclosed block", `credentials "app.example.com" { token = "` + secret + `" `,
			`credentials "app.example.com" { token = "************" `},
		{"garbage after the token", "credentials \"app.example.com\" {\n  token = \"" + secret + "\" ]\n}\n",
			`token = "************" ]`},
		{"misspelled block", `credential "app.example.com" { token = "` + secret + `" }`,
			`credential "app.example.com" { token = "************" }`},
		{"token in another block", "host \"app.example.com\" {\n  services = {}\n  token = \"" + secret + "\"\n}\n",
			`token = "************"`},
		{"unquoted", "credentials \"app.example.com\" {\n  token = " + secret + "\n}\n", `token = ************`},
		{"unterminated string", "credentials \"app.example.com\" {\n  token = \"" + secret + "\n}\n", `token = "************`},
		{"heredoc", "credentials \"app.example.com\" {\n  token = <<EOT\n" + secret + " %{ bad }\nEOT\n}\n", "*************%{ *** }"},
		{"interpolation", "credentials \"app.example.com\" {\n  token = \"${" + secret + "}\"\n}\n", `token = "${************}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.src), "mirror.hcl")
			var cerr *config.Error
			if !errors.As(err, &cerr) {
				t.Fatalf("got %v, want a *config.Error", err)
			}
			if strings.Contains(err.Error(), secret[:6]) {
				t.Errorf("the error shows the token:\n%s", err)
			}
			if !strings.Contains(err.Error(), "mirror.hcl:") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("the error lacks %q:\n%s", tt.want, err)
			}
		})
	}
}

func TestParseRefusesDeepNesting(t *testing.T) {
	for name, src := range map[string]string{
		"brackets":  "platforms = " + strings.Repeat("[", 100_000),
		"blocks":    strings.Repeat("settings {\n", 100_000),
		"operators": "platforms = " + strings.Repeat("!", 100_000) + "true",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := config.Parse([]byte(src), "mirror.hcl")
			var cerr *config.Error
			if !errors.As(err, &cerr) || !strings.Contains(err.Error(), "mirror.hcl:") || !strings.Contains(err.Error(), "Nesting too deep") {
				t.Fatalf("got %v, want a refusal at a position in mirror.hcl", err)
			}
		})
	}
}

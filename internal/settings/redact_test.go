package settings

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/environ"
)

func TestRedactor(t *testing.T) {
	r := NewRedactor([]string{
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG+bPxRfiCY",
		"AWS_SESSION_TOKEN=FwoGZXIvYXdz<&>token",
		"TF_TOKEN_app_example_com=tftoken-123456",
		"GITHUB_TOKEN=ghp_abcdefghij",
		"AWS_WEB_IDENTITY_TOKEN_FILE=/var/run/token",
		"HOME=/home/someone",
		"SHORT_TOKEN=abc",
	})
	s := Settings{Tokens: map[addrs.Hostname]string{"registry.example": "manifest-token-xyz"}, Env: environ.Env{}}
	r.Add(s.Secrets()...)
	for _, tc := range []struct{ in, want string }{
		{"key wJalrXUtnFEMI/K7MDENG+bPxRfiCY refused", "key xxxxx refused"},
		{"tftoken-123456 ghp_abcdefghij manifest-token-xyz", "xxxxx xxxxx xxxxx"},
		{"GET https://h/x?X-Amz-Signature=abc&part=1&token=zzz", "GET https://h/x?X-Amz-Signature=xxxxx&part=1&token=xxxxx"},
		{"file /var/run/token, home /home/someone, abc", "file /var/run/token, home /home/someone, abc"},
	} {
		if got := r.Redact(tc.in); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// In the forms JSON gives it, with and without HTML escaping.
	data, err := json.Marshal(map[string]string{"m": "echo FwoGZXIvYXdz<&>token here"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Redact(string(data)); strings.Contains(got, "FwoGZXIvYXdz") || !strings.Contains(got, "echo xxxxx here") {
		t.Errorf("Redact(%s) = %s", data, got)
	}
	var nilR *Redactor
	nilR.Add("whatever-secret")
	if got := nilR.Redact("u?sig=abc"); got != "u?sig=xxxxx" {
		t.Errorf("a nil Redactor: %q", got)
	}
}

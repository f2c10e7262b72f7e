package httpx

import "testing"

func TestRedactUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"module.c (git::https://oauth2:ghp_TOKEN@host/net.git?ref=v1) in main.tf:1": "module.c (git::https://xxxxx@host/net.git?ref=v1) in main.tf:1",
		`{"message":"https://user@host/x"}`:                                         `{"message":"https://xxxxx@host/x"}`,
		"write to ops@example.com about it":                                         "write to ops@example.com about it",
		"oci://reg.example/repo@sha256:abc":                                         "oci://reg.example/repo@sha256:abc",
		"no URL here":                                                               "no URL here",
	} {
		if got := RedactUserinfo(in); got != want {
			t.Errorf("RedactUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactQueriesKeepsTheTextAround(t *testing.T) {
	in := "module.d (https://host/good.zip?access_token=SECRET&X-Amz-Signature=SIG) in main.tf:4"
	want := "module.d (https://host/good.zip?access_token=xxxxx&X-Amz-Signature=xxxxx) in main.tf:4"
	if got := RedactQueries(in); got != want {
		t.Errorf("RedactQueries = %q, want %q", got, want)
	}
}

// The colon after a URL in a message ("URL: why") is the message's, kept
// after a redacted value (it was taken with the value, and the message
// read "…?token=xxxxx download: …").
func TestRedactQueriesKeepsTheMessagesColon(t *testing.T) {
	for _, in := range []string{
		"fetch module https://host/ok.zip?token=SECRET: download: 404",
		"fetch module https://host/ok.zip?token=xxxxx: download: 404",
	} {
		if got, want := RedactQueries(in), "fetch module https://host/ok.zip?token=xxxxx: download: 404"; got != want {
			t.Errorf("RedactQueries(%q) = %q, want %q", in, got, want)
		}
	}
}

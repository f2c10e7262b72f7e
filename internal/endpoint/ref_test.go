package endpoint

import (
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/inputerr"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		raw  string
		kind Kind
		path string
	}{
		{"site", Dir, "site"},
		{"./s3:x", Dir, "./s3:x"},
		{"/srv/mirror", Dir, "/srv/mirror"},
		{`C:\mirror`, Dir, `C:\mirror`},
		{"c:/mirror", Dir, "c:/mirror"},
		{"name:with-colon", Dir, "name:with-colon"},
		{"https://mirror.example/", HTTP, ""},
		{"http://127.0.0.1:8080/m/", HTTP, ""},
		{"s3://bucket/prefix/", S3, ""},
		{"oci://registry.example/tf/${namespace}/${type}", OCI, ""},
		{"oci-layout://layouts", OCILayout, "layouts"},
		{"./~/site", Dir, "./~/site"},
		{"site~", Dir, "site~"},
	} {
		ref, err := Parse(c.raw)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.raw, err)
			continue
		}
		if ref.Kind != c.kind || ref.Path != c.path || ref.Raw != c.raw {
			t.Errorf("Parse(%q) = %+v; want kind %v, path %q", c.raw, ref, c.kind, c.path)
		}
	}
}

func TestParseRefusesNearMisses(t *testing.T) {
	for raw, want := range map[string]string{
		"s3:/bucket/x":    "did you mean s3://bucket/x?",
		"s3:bucket":       "did you mean s3://bucket?",
		"S3://bucket/x":   "did you mean s3://bucket/x? (write the scheme in lower case",
		"oci:/reg/x":      "did you mean oci://reg/x?",
		"oci:reg/x":       "did you mean oci://reg/x?",
		"OCI://reg/x":     "did you mean oci://reg/x?",
		"oci-layout:/dir": "did you mean oci-layout:///dir?", // an absolute directory keeps its slash
		"oci-layout:dir":  "did you mean oci-layout://dir?",
		"oci_layout://d":  "did you mean oci-layout://d?",
		"HTTPS://m/":      "did you mean https://m/?",
		"https:/m/":       "did you mean https://m/?",
		"gs://bucket/x":   "gs:// locations are not supported",
		"ftp://host/x":    "ftp:// locations are not supported",
		"file:///srv/m":   "without file://",
		"s3://":           "names no s3://BUCKET/PREFIX/",
		"":                "empty",
		// A "~" no shell expanded (--out=~/site, or in a manifest).
		"~/site":                "write the full path, as $HOME/site, or ./~/site for a directory named like that",
		"~":                     "as $HOME,",
		"~ops/site":             `"~" is not expanded here`,
		"oci-layout://~/layout": "as $HOME/layout",
		// Blanks around a location, a scheme without its colon.
		" s3://bucket/p/":   `did you mean "s3://bucket/p/"?`,
		"s3://bucket/p/ ":   `did you mean "s3://bucket/p/"?`,
		"site\n":            `did you mean "site"?`,
		"s3//bucket/p/":     "did you mean s3://bucket/p/?",
		"oci//reg/x":        "did you mean oci://reg/x?",
		"oci-layout//tmp/l": "did you mean oci-layout://tmp/l?",
		"https//m/":         "did you mean https://m/?",
	} {
		_, err := Parse(raw)
		if err == nil {
			t.Errorf("Parse(%q) succeeded; want it refused", raw)
			continue
		}
		if !inputerr.Is(err) {
			t.Errorf("Parse(%q): %v is not an input error", raw, err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %q; want it to say %q", raw, err, want)
		}
	}
}

func TestParseNeverEchoesCredentials(t *testing.T) {
	for raw, want := range map[string]string{
		"oci://user:hunter2@reg.example/tf/${type}": "credentials do not belong in the location",
		"s3://KEY:hunter2@bucket/p/":                "credentials do not belong in the location",
		"OCI://user:hunter2@reg.example/x":          "did you mean oci://xxxxx@reg.example/x?",
		"oci:/user:hunter2@reg.example/x":           "did you mean oci://xxxxx@reg.example/x?",
		" oci://user:hunter2@reg.example/x":         `did you mean "oci://xxxxx@reg.example/x"?`,
		"oci//user:hunter2@reg.example/x":           "did you mean oci://xxxxx@reg.example/x?",
		"gs://user:hunter2@bucket/x":                "gs:// locations are not supported",
	} {
		_, err := Parse(raw)
		if err == nil || !inputerr.Is(err) {
			t.Errorf("Parse(%q) = %v; want an input error", raw, err)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %q; want it to say %q and never the password", raw, err, want)
		}
	}
}

func TestAccept(t *testing.T) {
	ref, err := Parse("https://mirror.example/")
	if err != nil {
		t.Fatal(err)
	}
	err = ref.Accept("--out", Dir, S3, OCI, OCILayout)
	if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "--out is an http(s):// mirror; --out takes a directory, s3://BUCKET/PREFIX/, oci://REPOSITORY_TEMPLATE or oci-layout://DIRECTORY") {
		t.Errorf("Accept = %v", err)
	}
	if err := ref.Accept("--mirror", Dir, HTTP); err != nil {
		t.Errorf("Accept(HTTP) = %v", err)
	}
}

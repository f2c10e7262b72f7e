package registry

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/httploc"
	"github.com/tfmirror/tfmirror/mirror"
)

func FuzzParseVersions(f *testing.F) {
	f.Add([]byte(`{"versions":[{"version":"1.0.0","protocols":["5.0"]},{"version":"2.0.0-beta1"}]}`))
	f.Add([]byte(`{"versions":[{"version":"v1"}]}`))
	f.Add([]byte(`{"versions":{}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"versions":[],"warnings":["deprecated","",null]}`))
	f.Add([]byte(`{"versions":[{"version":"1.0.0","platforms":[{"os":"linux","arch":"amd64"},{"os":"","arch":"x"}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := parseVersions(data)
		if err != nil {
			return
		}
		if len(list.Warnings) > maxWarnings {
			t.Fatalf("accepted %d warnings", len(list.Warnings))
		}
		for _, w := range list.Warnings {
			if len(w) > maxWarningBytes || strings.TrimSpace(w) == "" {
				t.Fatalf("kept warning of %d bytes: %q", len(w), w)
			}
		}
		for _, r := range list.Releases {
			if _, err := addrs.ParseVersion(r.Version.String()); err != nil {
				t.Fatalf("accepted version %q does not parse again: %v", r.Version, err)
			}
			for _, p := range r.Platforms {
				if _, err := addrs.ParsePlatform(p.String()); err != nil {
					t.Fatalf("version %s: accepted platform %q does not parse again: %v", r.Version, p, err)
				}
			}
		}
	})
}

func FuzzParseDownload(f *testing.F) {
	f.Add([]byte(`{"protocols":["5.0"],"os":"linux","arch":"amd64","filename":"p.zip","download_url":"/d/p.zip",
"shasums_url":"s","shasums_signature_url":"s.sig","shasum":"5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a",
"signing_keys":{"gpg_public_keys":[{"key_id":"A","ascii_armor":"x"}]}}`))
	f.Add([]byte(`{"os":"linux","arch":"amd64","filename":"../../evil.zip"}`))
	f.Add([]byte(`{"signing_keys":[]}`))
	docURL, err := url.Parse("https://registry.example/v1/providers/hashicorp/foo/1.0.0/download/linux/amd64")
	if err != nil {
		f.Fatal(err)
	}
	plat := addrs.Platform{OS: "linux", Arch: "amd64"}
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, err := parseDownload(data, docURL, plat, nil)
		if err != nil {
			return
		}
		if meta.Filename == "" || strings.ContainsAny(meta.Filename, "/\\\x00") || meta.Filename == ".." {
			t.Fatalf("accepted filename %q", meta.Filename)
		}
		for _, loc := range []mirror.Location{meta.Archive, meta.Sums, meta.Signature} {
			l, ok := loc.(httploc.Location)
			if !ok || l.URL() == nil || (l.URL().Scheme != "https" && l.URL().Scheme != "http") || l.URL().User != nil {
				t.Fatalf("accepted location %v", loc)
			}
		}
	})
}

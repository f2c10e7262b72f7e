package modfetch

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLocation(t *testing.T) {
	type parsed struct {
		Git     bool
		URL     string
		Archive archiveKind
		Ref     string
		Subdir  string
		Source  string
	}
	tests := []struct {
		loc  string
		want parsed
	}{
		{"https://example.com/m.zip", parsed{URL: "https://example.com/m.zip", Archive: kindZip, Source: "https://example.com/m.zip"}},
		{"https://example.com/M.TGZ", parsed{URL: "https://example.com/M.TGZ", Archive: kindTarGz, Source: "https://example.com/M.TGZ"}},
		{"https://example.com/a/b.tar.gz//*", parsed{URL: "https://example.com/a/b.tar.gz", Archive: kindTarGz, Subdir: "*", Source: "https://example.com/a/b.tar.gz"}},
		{
			"https://example.com/get?X-Amz-Signature=s%2F1&archive=zip&b=2",
			parsed{URL: "https://example.com/get?X-Amz-Signature=s%2F1&b=2", Archive: kindZip, Source: "https://example.com/get"},
		},
		{"https://example.com/m.zip//modules/x/", parsed{URL: "https://example.com/m.zip", Archive: kindZip, Subdir: "modules/x", Source: "https://example.com/m.zip"}},
		{"https://example.com/m.zip//.", parsed{URL: "https://example.com/m.zip", Archive: kindZip, Source: "https://example.com/m.zip"}},
		{"http://127.0.0.1:8080/m.zip", parsed{URL: "http://127.0.0.1:8080/m.zip", Archive: kindZip, Source: "http://127.0.0.1:8080/m.zip"}},
		{"http://[::1]:8080/m.zip", parsed{URL: "http://[::1]:8080/m.zip", Archive: kindZip, Source: "http://[::1]:8080/m.zip"}},
		{
			"git::https://example.com/r.git//modules/x?ref=v1.2.0",
			parsed{Git: true, URL: "https://example.com/r.git", Ref: "v1.2.0", Subdir: "modules/x", Source: "git::https://example.com/r.git?ref=v1.2.0"},
		},
		{
			"git::https://user:tok@example.com/r.git?ref=main&depth=1",
			parsed{Git: true, URL: "https://user:tok@example.com/r.git", Ref: "main", Source: "git::https://example.com/r.git?ref=main"},
		},
		{"git::https://example.com/r.git", parsed{Git: true, URL: "https://example.com/r.git", Source: "git::https://example.com/r.git"}},
		{"git::http://localhost:1/r.git?ref=a/b", parsed{Git: true, URL: "http://localhost:1/r.git", Ref: "a/b", Source: "git::http://localhost:1/r.git?ref=a%2Fb"}},
	}
	for _, tc := range tests {
		t.Run(tc.loc, func(t *testing.T) {
			src, err := parseLocation(tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			got := parsed{src.git, src.url.String(), src.archive, src.ref, src.subdir, src.provenance()}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Locations this package does not fetch are refused, saying why, and the
// error shows no secret.
func TestParseLocationRefuses(t *testing.T) {
	tests := []struct{ loc, want string }{
		{"git::ssh://git@example.com/r.git", "git over ssh is not supported"},
		{"git::git@github.com:org/r.git", "not a URL"},
		{"git::file:///tmp/r", "git over file is not supported"},
		{"file:///tmp/m.zip", "scheme file is not supported"},
		{"s3::https://s3.amazonaws.com/b/m.zip", "s3:: sources are not supported"},
		{"hg::https://example.com/r", "hg:: sources are not supported"},
		{"github.com/org/repo", "not an absolute URL"},
		{"./m.zip", "not an absolute URL"},
		{"http://example.com/m.zip", "plain http is not allowed"},
		{"git::http://example.com/r.git", "plain http is not allowed"},
		{"https://example.com/download", "X-Terraform-Get header, as go-getter would, is not supported"},
		{"https://example.com/m?archive=tar.bz2", "archive=tar.bz2 is not supported"},
		{"https://example.com/m.zip//../x", "leaves the package"},
		{"https://example.com/m.zip//a/[", "not a valid pattern"},
		{"git::https://example.com/r.git?ref=--upload-pack=x", "not a valid tag, branch or commit"},
		{"git::https://example.com/r.git?ref=a..b", "not a valid tag, branch or commit"},
		{"git::https://example.com/r.git?ref=v1&ref=v2", "once"},
		{"git::https://example.com/r.git?depth=0", "not a positive number"},
		{"git::https://example.com/r.git?sshkey=c2VjcmV0", "sshkey"},
	}
	f := New(Config{})
	for _, tc := range tests {
		t.Run(tc.loc, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), tc.loc, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "c2VjcmV0") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

// Errors never show userinfo or secret query values of a location.
func TestLocationIsRedactedInErrors(t *testing.T) {
	f := New(Config{})
	for _, loc := range []string{
		"git::ssh://user:hunter2@example.com/r.git",
		"https://user:hunter2@example.com/download?token=hunter2",
		"https://hunter2@example.com/m.zip//../x",
		"git::user:hunter2@example.com:r.git",
	} {
		_, err := f.Fetch(context.Background(), loc, t.TempDir())
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Fetch(%s): err = %v, want an error without the secret", loc, err)
		}
	}
}

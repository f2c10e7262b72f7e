package ocistore

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/layout"
)

func TestTagMapping(t *testing.T) {
	for _, tc := range []struct {
		version, tag string
	}{
		{"1.0.0", "1.0.0"},
		{"1.1.0+abc", "1.1.0_abc"},
		{"1.0.0-rc.1+build.5", "1.0.0-rc.1_build.5"},
		{"0.3.0-beta1", "0.3.0-beta1"},
	} {
		v, err := addrs.ParseVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		if got := Tag(v); got != tc.tag {
			t.Errorf("Tag(%s) = %q, want %q", tc.version, got, tc.tag)
		}
		back, ok := VersionOfTag(tc.tag)
		if !ok || !back.Same(v) {
			t.Errorf("VersionOfTag(%q) = %s, %v", tc.tag, back, ok)
		}
	}
	// Tags OpenTofu would also parse as versions, but that are not the
	// canonical tag of one (they would poison the repository), and tags
	// that are no version at all.
	for _, tag := range []string{"1", "1.2", "01.2.3", "v1.2.3", "latest", "linux_amd64", "sha256-0123abcd", "1.0.0+abc", ""} {
		if v, ok := VersionOfTag(tag); ok {
			t.Errorf("VersionOfTag(%q) = %s, want none", tag, v)
		}
	}
}

func TestTemplateRendering(t *testing.T) {
	p := addrs.Provider{Hostname: "registry.opentofu.org", Namespace: "hashicorp", Type: "aws"}
	for _, tc := range []struct{ tmpl, want string }{
		{"r.example.com/${hostname}/${namespace}/${type}", "r.example.com/registry.opentofu.org/hashicorp/aws"},
		{"r.example.com/mirror/${namespace}-${type}", "r.example.com/mirror/hashicorp-aws"},
		{"r.example.com/${ namespace }/${~type~}", "r.example.com/hashicorp/aws"},
	} {
		tm, err := parseTemplate(tc.tmpl)
		if err != nil {
			t.Fatalf("parseTemplate(%q): %v", tc.tmpl, err)
		}
		if got := tm.render(p); got != tc.want {
			t.Errorf("render(%q) = %q, want %q", tc.tmpl, got, tc.want)
		}
	}
	// $${ is a literal "${", as in HCL: no valid repository name.
	if _, err := parseTemplate("r.example.com/x$${y}/${type}"); err == nil {
		t.Error("a template giving a literal ${ is accepted")
	}
}

// TestCheckRedirect: the client's own redirect policy drops credentials
// when a redirect leaves the first request's origin, including for the
// same host name on another port, which net/http alone does not.
func TestCheckRedirect(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		keep     bool
	}{
		{"https://registry.example.com/v2/a", "https://registry.example.com/v2/b", true},
		{"https://registry.example.com/v2/a", "https://registry.example.com:443/v2/b", true},
		{"https://registry.example.com/v2/a", "https://registry.example.com:8443/v2/b", false},
		{"https://registry.example.com/v2/a", "https://cdn.registry.example.com/blob", false},
		{"https://registry.example.com/v2/a", "https://s3.amazonaws.com/bucket/blob", false},
		{"https://registry.example.com/v2/a", "http://registry.example.com/v2/b", false},
	} {
		first := mustRequest(t, tc.from)
		first.Header.Set("Authorization", "Bearer secret")
		next := mustRequest(t, tc.to)
		next.Header.Set("Authorization", "Bearer secret") // as net/http copies it
		if err := checkRedirect(next, []*http.Request{first}); err != nil {
			t.Fatal(err)
		}
		if kept := next.Header.Get("Authorization") != ""; kept != tc.keep {
			t.Errorf("redirect %s -> %s: Authorization kept = %v, want %v", tc.from, tc.to, kept, tc.keep)
		}
	}
	// Once the chain has left the origin, coming back does not restore it.
	first := mustRequest(t, "https://registry.example.com/v2/a")
	away := mustRequest(t, "https://cdn.example.net/x")
	back := mustRequest(t, "https://registry.example.com/v2/b")
	back.Header.Set("Authorization", "Bearer secret")
	if err := checkRedirect(back, []*http.Request{first, away}); err != nil {
		t.Fatal(err)
	}
	if back.Header.Get("Authorization") != "" {
		t.Error("Authorization restored after the chain came back to the registry")
	}
}

func mustRequest(t *testing.T, raw string) *http.Request {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}}
}

func TestLongVersionTag(t *testing.T) {
	v, err := addrs.ParseVersion("1.0.0-" + strings.Repeat("a", 130))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), "oci-layout://"+t.TempDir(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := addrs.Provider{Hostname: "registry.opentofu.org", Namespace: "hashicorp", Type: "foo"}
	_, err = s.Push(t.Context(), layout.Release{Provider: p, Version: v}, PushOptions{})
	if err == nil || !strings.Contains(err.Error(), "not a valid OCI tag") {
		t.Errorf("Push of a version whose tag is too long: %v", err)
	}
}

// createFile never replaces a file another process made meanwhile, and
// leaves no temporary file.
func TestCreateFileKeepsAnExistingFile(t *testing.T) {
	dir := t.TempDir()
	theirs := filepath.Join(dir, "index.json")
	if err := os.WriteFile(theirs, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := createFile(theirs, []byte("ours")); err != nil {
		t.Fatalf("createFile over an existing file: %v", err)
	}
	if data, err := os.ReadFile(theirs); err != nil || string(data) != "theirs" {
		t.Errorf("the existing file holds %q, %v; want it untouched", data, err)
	}
	ours := filepath.Join(dir, "oci-layout")
	if err := createFile(ours, []byte("ours")); err != nil {
		t.Fatalf("createFile: %v", err)
	}
	if data, err := os.ReadFile(ours); err != nil || string(data) != "ours" {
		t.Errorf("the new file holds %q, %v; want %q", data, err, "ours")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the directory holds %q; want only the two files", names)
	}
}

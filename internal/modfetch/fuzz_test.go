package modfetch

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

// Whatever a registry answers, a location parses to something safe to
// fetch, or to an error.
func FuzzParseLocation(f *testing.F) {
	for _, seed := range []string{
		"https://example.com/m.zip", "git::https://u:p@h/r.git//a/*?ref=v1&depth=2",
		"https://h/get?archive=tgz&sig=x//sub", "git::ssh://h/r", "s3::https://b/k.zip", "https://h//..//x.zip",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		src, err := parseLocation(loc)
		if err != nil {
			return
		}
		if err := checkTransport(src.url, src.git); err != nil {
			t.Errorf("%q: accepted a transport it refuses: %v", loc, err)
		}
		if src.subdir != "" && (strings.HasPrefix(src.subdir, "/") || strings.Contains("/"+src.subdir+"/", "/../") || path.Clean(src.subdir) != src.subdir) {
			t.Errorf("%q: subdirectory %q", loc, src.subdir)
		}
		if !src.git && src.archive == "" {
			t.Errorf("%q: an archive of no kind", loc)
		}
		prov, err := url.Parse(strings.TrimPrefix(src.provenance(), "git::"))
		if err != nil || prov.User != nil || prov.Host != src.url.Host {
			t.Errorf("%q: provenance %q (%v)", loc, src.provenance(), err)
		}
	})
}

// An entry name that is accepted stays inside the package.
func FuzzEntryName(f *testing.F) {
	for _, seed := range []string{"a/b", "./a", "../a", "/a", `a\b`, "a//b/", ".", "a/./../b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, why := entryName(raw)
		if why != "" || name == "" {
			return
		}
		if strings.HasPrefix(name, "/") || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			t.Errorf("entryName(%q) = %q", raw, name)
		}
	})
}

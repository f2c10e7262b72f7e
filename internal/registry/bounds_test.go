package registry_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
)

// versionsDoc is a provider versions document of n versions, each with
// the platforms given.
func versionsDoc(n int, platforms string) string {
	var b strings.Builder
	b.WriteString(`{"versions":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"version":"%d.%d.%d","platforms":[%s]}`, i/1000000, i/1000%1000, i%1000, platforms)
	}
	b.WriteString(`]}`)
	return b.String()
}

// A versions document is refused once it lists more versions, or a
// version more platforms, than any registry sends (100,000 and 1,000),
// while it is decoded; one under the bounds is read.
func TestVersionsDocumentBounds(t *testing.T) {
	ca := testca.New(t)
	platform := `{"os":"linux","arch":"amd64"}`
	for _, tt := range []struct {
		name string
		doc  string
		want string // "" for a document that is read
	}{
		{"at the bound", versionsDoc(100_000, ""), ""},
		{"too many versions", versionsDoc(100_001, ""), "more than 100000 versions"},
		{"platforms at the bound", versionsDoc(1, strings.TrimSuffix(strings.Repeat(platform+",", 1000), ",")), ""},
		{"too many platforms", versionsDoc(1, strings.TrimSuffix(strings.Repeat(platform+",", 1001), ",")), "more than 1000 platforms of a version"},
		{"module versions", `{"modules":[{"versions":[` + strings.TrimSuffix(strings.Repeat(`{"version":"1.0.0"},`, 100_001), ",") + `]}]}`, "more than 100000 versions"},
		{"modules", `{"modules":[` + strings.TrimSuffix(strings.Repeat(`{"versions":[]},`, 101), ",") + `]}`, "more than 100 modules"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, ca, serveJSON(tt.doc))
			c := newClient(t, ca, map[addrs.Hostname]map[string]string{srv.Host: {"providers.v1": srv.URL + "/v1/", "modules.v1": srv.URL + "/m/"}}, nil)
			var err error
			if strings.HasPrefix(tt.doc, `{"modules"`) {
				_, err = c.ModuleVersions(ctx(t), addrs.Module{Host: srv.Host, Namespace: "acme", Name: "net", TargetSystem: "aws"})
			} else {
				_, err = c.AvailableVersions(ctx(t), provider(srv.Host, "hashicorp", "foo"))
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantErrContains(t, err, tt.want, "parse versions list from https://")
		})
	}
}

// A versions document just under the size limit that packs a million
// versions into it is refused after 100,000, without decoding the rest:
// it used to take more than 100 MiB.
func TestVersionsDocumentMemory(t *testing.T) {
	ca := testca.New(t)
	var b strings.Builder
	b.WriteString(`{"versions":[`)
	for i := range 1_000_000 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"version":"1"}`)
	}
	b.WriteString(`]}`)
	doc := b.String()
	if len(doc) > 16<<20 {
		t.Fatalf("the document has %d bytes, more than the size limit", len(doc))
	}
	srv := newServer(t, ca, serveJSON(doc))
	c := newClient(t, ca, map[addrs.Hostname]map[string]string{srv.Host: {"providers.v1": srv.URL + "/v1/"}}, nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := c.AvailableVersions(ctx(t), provider(srv.Host, "hashicorp", "foo"))
	runtime.ReadMemStats(&after)
	t.Logf("allocated %d MiB", (after.TotalAlloc-before.TotalAlloc)>>20)
	wantErrContains(t, err, "more than 100000 versions")
	// The document itself (read by the client into a growing buffer, and
	// written by the test server) and the 100,000 versions decoded: about
	// 100 MiB; decoding the million took 420 MiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 160<<20 {
		t.Errorf("reading the document allocated %d MiB", got>>20)
	}
}

// An error about a huge document quotes a short excerpt of it with every
// control character escaped: a version string of 15 MiB (a document just
// under the size limit, which the error used to quote whole), terminal
// control sequences where a download document names protocols and a
// platform, a number of 15 MiB where a string belongs.
func TestHugeDocumentErrorIsShort(t *testing.T) {
	ca := testca.New(t)
	control := `\u001b]0;owned\u0007\u001b[2J`
	number := strings.Repeat("9", 15<<20)
	download := func(protocols, os string) string {
		return `{"protocols":[` + protocols + `],"os":"` + os + `","arch":"amd64","filename":"p.zip","download_url":"p.zip",
"shasums_url":"s","shasums_signature_url":"s.sig","shasum":"5f9c7aa76b7c34d722fc9123208e26b22d60440cb47150dd04733b9b94f4541a","signing_keys":{"gpg_public_keys":[]}}`
	}
	for _, tt := range []struct {
		name, doc string
	}{
		{"version string", `{"versions":[{"version":"` + strings.Repeat("x", 15<<20) + `"}]}`},
		{"number", `{"versions":[{"version":` + number + `}]}`},
		{"protocols", download(`"`+strings.Repeat(control, 1000)+`"`, "linux")},
		{"platform", download(`"5.0"`, control)},
		{"package size", `{"protocols":["5.0"],"os":"linux","arch":"amd64","packages":{"linux_amd64":{"package_size":` + number + `}}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, ca, serveJSON(tt.doc))
			c := newClient(t, ca, map[addrs.Hostname]map[string]string{srv.Host: {"providers.v1": srv.URL + "/v1/", "modules.v1": srv.URL + "/m/"}}, nil)
			var err error
			switch {
			case strings.HasPrefix(tt.doc, `{"modules"`):
				_, err = c.ModuleVersions(ctx(t), addrs.Module{Host: srv.Host, Namespace: "acme", Name: "net", TargetSystem: "aws"})
			case strings.HasPrefix(tt.doc, `{"protocols"`):
				_, err = c.PackageMeta(ctx(t), provider(srv.Host, "hashicorp", "foo"), addrs.MustParseVersion("1.0.0"), linuxAMD64)
			default:
				_, err = c.AvailableVersions(ctx(t), provider(srv.Host, "hashicorp", "foo"))
			}
			if err == nil {
				t.Fatal("the document was accepted")
			}
			msg := err.Error()
			if len(msg) > 2000 {
				t.Errorf("the error has %d bytes: %.300s...", len(msg), msg)
			}
			if i := strings.IndexFunc(msg, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
				t.Errorf("the error holds a raw control character at %d: %.300q", i, msg)
			}
		})
	}
}

// A versions list's warnings (what clients print at init: a deprecation)
// are read, blank ones left out and each cut to 4 KiB at a character
// boundary; a list of more than 100 is refused while it is decoded.
func TestVersionsWarnings(t *testing.T) {
	ca := testca.New(t)
	long := strings.Repeat("é", 3000) // 6,000 bytes; cut at 4,092 (4,093 is inside an é)
	for _, tt := range []struct {
		name     string
		warnings string
		want     []string
		err      string
	}{
		{"none", `null`, nil, ""},
		{"two", `["This provider is deprecated; use acme/new.", "  ", "second\u001b[31m"]`, []string{"This provider is deprecated; use acme/new.", "second\x1b[31m"}, ""},
		{"long", `["` + long + `"]`, []string{long[:4092] + "..."}, ""},
		{"at the bound", `[` + strings.TrimSuffix(strings.Repeat(`"w",`, 100), ",") + `]`, slices.Repeat([]string{"w"}, 100), ""},
		{"too many", `[` + strings.TrimSuffix(strings.Repeat(`"w",`, 101), ",") + `]`, nil, "more than 100 warnings"},
		{"not a list", `"deprecated"`, nil, "warnings: not a JSON array"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, ca, serveJSON(`{"versions":[{"version":"1.0.0"}],"warnings":`+tt.warnings+`}`))
			c := newClient(t, ca, map[addrs.Hostname]map[string]string{srv.Host: {"providers.v1": srv.URL + "/v1/"}}, nil)
			l, err := c.ProviderListing(ctx(t), provider(srv.Host, "hashicorp", "foo"))
			if tt.err != "" {
				wantErrContains(t, err, tt.err, "parse versions list from https://")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !l.CanWarn || len(l.Releases) != 1 || !slices.Equal(l.Warnings, tt.want) {
				t.Fatalf("listing = %+v, want warnings %q", l, tt.want)
			}
			for _, w := range l.Warnings {
				if !utf8.ValidString(w) || len(w) > 4096 {
					t.Fatalf("kept warning of %d bytes, valid UTF-8 %v", len(w), utf8.ValidString(w))
				}
			}
		})
	}
}

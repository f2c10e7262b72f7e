package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/tfmirror/tfmirror/internal/htmlcatalog"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/internal/testutil/fakeregistry"
	"github.com/tfmirror/tfmirror/internal/testutil/serverproc"
	"github.com/tfmirror/tfmirror/internal/testutil/targz"
	"github.com/tfmirror/tfmirror/internal/testutil/testca"
	"github.com/tfmirror/tfmirror/internal/testutil/zipbuild"
	"github.com/tfmirror/tfmirror/layout"
)

// chromiumBin returns Debian's chromium (or TFMIRROR_CHROMIUM). A missing
// browser fails the test where every tool must be there (CI, scripts/test)
// and skips it elsewhere.
func chromiumBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TFMIRROR_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		if serverproc.Required() {
			t.Fatalf("chromium not found (%v): install Debian's chromium (scripts/test does) or set TFMIRROR_CHROMIUM", err)
		}
		t.Skipf("chromium not found: %v", err)
	}
	return p
}

// browserPage is what headless Chromium made of a page: the DOM after its
// script ran, and what it logged to the page's console (script errors,
// Content-Security-Policy violations and failed loads are logged there).
type browserPage struct {
	dom     *html.Node
	console []string
}

var consoleLineRe = regexp.MustCompile(`:CONSOLE[:(]`)

// runChromium loads pageURL in headless Chromium with args, lets it run
// (its requests included) and returns what it wrote to stdout and the
// lines it logged from the page's console.
func runChromium(t *testing.T, bin, pageURL string, args ...string) (stdout []byte, console []string) {
	t.Helper()
	profile := t.TempDir()
	args = append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
		"--run-all-compositor-stages-before-draw", "--virtual-time-budget=10000",
	}, args...)
	args = append(args, pageURL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = mergeEnv(baseEnv(), []string{"HOME=" + profile})
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", pageURL, err, errOut.String())
	}
	for _, line := range strings.Split(errOut.String(), "\n") {
		if consoleLineRe.MatchString(line) {
			console = append(console, line)
		}
	}
	return out.Bytes(), console
}

// openInChromium loads pageURL in headless Chromium and returns the DOM
// after the page's script ran. The window is tall, so that every row of a
// small page is in view.
func openInChromium(t *testing.T, bin, pageURL string, extra ...string) browserPage {
	t.Helper()
	stdout, console := runChromium(t, bin, pageURL, append(extra, "--window-size=1280,20000", "--dump-dom")...)
	dom, err := html.Parse(bytes.NewReader(stdout))
	if err != nil {
		t.Fatalf("parse the DOM chromium dumped: %v", err)
	}
	if findByAttr(dom, "id", "summary") == nil {
		t.Fatalf("chromium's DOM of %s is not the catalog:\n%s", pageURL, stdout)
	}
	return browserPage{dom: dom, console: console}
}

// ---------------------------------------------------------------------------
// The DOM

func domAttr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func domFind(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

func findByAttr(n *html.Node, key, val string) *html.Node {
	found := domFind(n, func(d *html.Node) bool { v, ok := domAttr(d, key); return ok && v == val })
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

func domText(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// What the tree holds, read from the tree, not from the page.

type catalogPlatform struct {
	platform string
	archive  string // path in the tree
	hashes   []string
}

type catalogVersion struct {
	provider, version, key string
	doc                    string // path of <version>.json
	platforms              []catalogPlatform
}

type catalogModule struct {
	module, version string
	record          layout.ModuleRecord
	doc, pkg        string
}

func treeContents(t *testing.T, site string) ([]catalogVersion, []catalogModule) {
	t.Helper()
	ctx := context.Background()
	tree, err := layout.OpenExisting(site)
	if err != nil {
		t.Fatal(err)
	}
	providers, err := tree.Providers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var versions []catalogVersion
	for _, p := range providers {
		list, err := tree.Versions(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range list {
			doc, err := tree.ReadVersion(ctx, p, v)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := tree.ReadRecord(ctx, p, v)
			if err != nil {
				t.Fatal(err)
			}
			cv := catalogVersion{provider: p.String(), version: v.String(), key: "unsigned", doc: layout.VersionPath(p, v)}
			if rec.Provenance.KeyID != "" {
				cv.key = "key " + rec.Provenance.KeyID
			}
			for plat, a := range doc.Archives {
				rel, ok := layout.ArchiveRel(layout.VersionPath(p, v), a.URL)
				if !ok {
					t.Fatalf("%s %s %s: archive url %q outside the tree", p, v, plat, a.URL)
				}
				cp := catalogPlatform{platform: plat, archive: rel}
				for _, h := range a.Hashes {
					cp.hashes = append(cp.hashes, string(h))
				}
				cv.platforms = append(cv.platforms, cp)
			}
			versions = append(versions, cv)
		}
	}
	modules, err := tree.Modules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mods []catalogModule
	for _, m := range modules {
		list, err := tree.ModuleVersions(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range list {
			rec, err := tree.ReadModuleRecord(ctx, m, v)
			if err != nil {
				t.Fatal(err)
			}
			mods = append(mods, catalogModule{module: m.String(), version: v.String(), record: rec, doc: layout.ModuleRecordPath(m, v), pkg: layout.ModuleArchivePath(m, v)})
		}
	}
	return versions, mods
}

// ---------------------------------------------------------------------------

// catalogFixture is a mirror built by the real binary from the fake
// registry: hashicorp/foo signed in two versions, hashicorp/bar unsigned,
// two modules (a zip, and a tar.gz with a subdirectory), with the registry
// replica; and its catalog.
type catalogFixture struct {
	ca       *testca.CA
	reg      *fakeregistry.Registry
	site     string
	versions []catalogVersion
	modules  []catalogModule
}

func newCatalogFixture(t *testing.T) *catalogFixture {
	t.Helper()
	f := &catalogFixture{ca: testca.New(t)}
	f.reg = fakeregistry.New(t, f.ca)
	f.reg.Add("hashicorp", "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	f.reg.Add("hashicorp", "foo", "1.1.0", "linux_amd64", "darwin_arm64")
	f.reg.AddWithOptions("hashicorp", "bar", "0.1.0", fakeregistry.Options{Unsigned: true}, "linux_amd64")
	f.reg.AddFile("net.zip", zipbuild.Bytes(t, zipbuild.File("main.tf", "output \"cidr\" {\n  value = \"10.0.0.0/16\"\n}\n")))
	f.reg.AddModule("acme/net/aws", "1.0.0", "/files/net.zip", false)
	f.reg.AddFile("sub.tar.gz", targz.Pack(t, []targz.Entry{
		targz.Regular("acme-sub/modules/vpc/main.tf", "# vpc\n"),
		targz.Regular("acme-sub/README.md", "sub\n"),
	}, nil))
	f.reg.AddModule("acme/sub/aws", "2.0.0", "/files/sub.tar.gz//acme-sub/modules/vpc", false)

	work := t.TempDir()
	f.site = filepath.Join(work, "site")
	writeFile(t, filepath.Join(work, "mirror.hcl"), fmt.Sprintf(`platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/foo" {
  versions = ">= 1.0.0"
}

provider "hashicorp/bar" {
  versions = "0.1.0"
}

module "acme/net/aws" {
  versions = "1.0.0"
}

module "acme/sub/aws" {
  versions = "2.0.0"
}

host "registry.opentofu.org" {
  services = { "providers.v1" = %q, "modules.v1" = %q }
}
`, f.reg.ServicesURL, f.reg.ModulesURL))
	stdout, stderr, code := runTfmirror(t, work, caFileEnv(t, f.ca), "build", "--registry-replica")
	if code != 0 {
		t.Fatalf("tfmirror build: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// Until the build writes it, the test does.
	dir, err := layout.Open(f.site)
	if err != nil {
		t.Fatal(err)
	}
	err = htmlcatalog.Write(context.Background(), dir.Tree, htmlcatalog.Options{})
	if cerr := dir.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("htmlcatalog.Write: %v", err)
	}

	f.versions, f.modules = treeContents(t, f.site)
	if len(f.versions) != 3 || len(f.modules) != 2 {
		t.Fatalf("the mirror holds %d provider versions and %d module versions, want 3 and 2", len(f.versions), len(f.modules))
	}
	for _, v := range f.versions {
		want := "key " + f.reg.KeyID
		if strings.HasSuffix(v.provider, "/bar") {
			want = "unsigned"
		}
		if v.key != want {
			t.Fatalf("%s %s: the tree records %q, want %q", v.provider, v.version, v.key, want)
		}
	}
	return f
}

// checkShowsTree checks that the rendered page shows everything the tree
// holds, and returns every link it has.
func (f *catalogFixture) checkShowsTree(t *testing.T, dom *html.Node) {
	t.Helper()
	for _, v := range f.versions {
		sec := findByAttr(dom, "id", "provider-"+v.provider)
		if sec == nil {
			t.Errorf("the page has no section for %s", v.provider)
			continue
		}
		row := findByAttr(sec, "data-version", v.version)
		if row == nil {
			t.Errorf("the page does not show %s %s", v.provider, v.version)
			continue
		}
		text := domText(row)
		if !strings.Contains(text, v.key) {
			t.Errorf("%s %s: the page shows %q, without %q", v.provider, v.version, text, v.key)
		}
		for _, p := range v.platforms {
			pr := findByAttr(row, "data-platform", p.platform)
			if pr == nil {
				t.Errorf("%s %s: the page does not show platform %s", v.provider, v.version, p.platform)
				continue
			}
			info, err := os.Stat(filepath.Join(f.site, filepath.FromSlash(p.archive)))
			if err != nil {
				t.Fatal(err)
			}
			size := fmt.Sprintf("(%d bytes)", info.Size())
			if info.Size() < 1024 {
				size = fmt.Sprintf("%d B", info.Size())
			}
			text := domText(pr)
			for _, want := range append([]string{p.platform, filepath.Base(p.archive), size}, p.hashes...) {
				if !strings.Contains(text, want) {
					t.Errorf("%s %s %s: the page shows %q, without %q", v.provider, v.version, p.platform, text, want)
				}
			}
		}
	}
	for _, m := range f.modules {
		sec := findByAttr(dom, "id", "module-"+m.module)
		if sec == nil {
			t.Errorf("the page has no section for module %s", m.module)
			continue
		}
		row := findByAttr(sec, "data-version", m.version)
		if row == nil {
			t.Errorf("the page does not show module %s %s", m.module, m.version)
			continue
		}
		text := domText(row)
		want := []string{m.version, m.record.SHA256, m.record.Upstream.Location}
		for _, s := range []string{m.record.Upstream.Commit, m.record.Upstream.ArchiveSHA256, m.record.Subdir} {
			if s != "" {
				want = append(want, s)
			}
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("module %s %s: the page shows %q, without %q", m.module, m.version, text, w)
			}
		}
	}
}

// links returns every link of the page, resolved against its URL.
func links(t *testing.T, dom *html.Node, pageURL string) []*url.URL {
	t.Helper()
	base, err := url.Parse(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	var out []*url.URL
	for _, a := range domFind(dom, func(n *html.Node) bool { return n.Data == "a" }) {
		ref, _ := domAttr(a, "href")
		if strings.HasPrefix(ref, "#") {
			if findByAttr(dom, "id", strings.TrimPrefix(ref, "#")) == nil {
				t.Errorf("link %q leads to no element of the page", ref)
			}
			continue
		}
		u, err := url.Parse(ref)
		if err != nil {
			t.Errorf("link %q: %v", ref, err)
			continue
		}
		out = append(out, base.ResolveReference(u))
	}
	return out
}

// TestHTMLCatalogInChromium opens the catalog of a built mirror in headless
// Chromium, from the directory (file://, with and without JavaScript) and
// through nginx under a path prefix: every provider, version, platform,
// size, hash and key ID the tree holds is on the rendered page, and the
// modules with their records; every link leads to the file it names;
// Chromium logs nothing to the console (no script error, no Content-
// Security-Policy violation, no failed load). Served over HTTPS, the
// script puts the page's own URL in the client configuration and shows
// each version's Last-Modified as nginx reports it.
func TestHTMLCatalogInChromium(t *testing.T) {
	chromium := chromiumBin(t)
	f := newCatalogFixture(t)
	page, err := os.ReadFile(filepath.Join(f.site, htmlcatalog.Path))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("file", func(t *testing.T) {
		pageURL := (&url.URL{Scheme: "file", Path: filepath.Join(f.site, htmlcatalog.Path)}).String()
		got := openInChromium(t, chromium, pageURL)
		if len(got.console) > 0 {
			t.Errorf("chromium logged to the console:\n%s", strings.Join(got.console, "\n"))
		}
		f.checkShowsTree(t, got.dom)
		if _, hidden := domAttr(findByAttr(got.dom, "id", "filter"), "hidden"); hidden {
			t.Errorf("the filter is still hidden: the page's script did not run")
		}
		for _, u := range links(t, got.dom, pageURL) {
			if u.Scheme != "file" || !strings.HasPrefix(u.Path, f.site+"/") {
				t.Errorf("link %s leaves the tree", u)
				continue
			}
			if _, err := os.Stat(u.Path); err != nil {
				t.Errorf("link %s: %v", u, err)
			}
		}
		// From a file, the placeholder stays and no time is shown.
		if cfg := domText(findByAttr(got.dom, "id", "provider-installation")); !strings.Contains(cfg, htmlcatalog.Placeholder) {
			t.Errorf("provider_installation block from a file:\n%s", cfg)
		}
	})

	// nginx serves the tree under a path prefix, and again under another
	// with a header that forbids every script: a browser without
	// JavaScript.
	const prefix, noScript = "/some/prefix/", "/no-script/"
	base := startNginxServer(t, f.site, f.ca, func(port int, certFile, keyFile, root string) string {
		return fmt.Sprintf(`server {
		listen 127.0.0.1:%d ssl;
		server_name localhost 127.0.0.1;
		ssl_certificate %s;
		ssl_certificate_key %s;
		types {
			text/html html;
			application/json json;
			application/zip zip;
		}
		location ^~ %s {
			alias %s;
			index index.html;
		}
		location ^~ %[6]s {
			alias %[5]s;
			index index.html;
			add_header Content-Security-Policy "script-src 'none'" always;
		}
		location / {
			return 404;
		}
	}`, port, nginxQuote(certFile), nginxQuote(keyFile), prefix, nginxQuote(root+"/"), noScript)
	})

	// Without JavaScript: Chromium renders the page (a screenshot: its
	// DOM dump needs script) logging nothing but the refusal of the page's
	// script, and the DOM before any script, as an HTML parser builds it,
	// shows everything but the times.
	t.Run("without JavaScript", func(t *testing.T) {
		pageURL := strings.TrimSuffix(base, "/") + noScript
		png := filepath.Join(t.TempDir(), "catalog.png")
		_, console := runChromium(t, chromium, pageURL, "--ignore-certificate-errors", "--window-size=1280,2000", "--screenshot="+png)
		if len(console) != 1 || !strings.Contains(console[0], "Content Security Policy") {
			t.Errorf("chromium logged %d lines, want only that the page's script was refused:\n%s", len(console), strings.Join(console, "\n"))
		}
		if info, err := os.Stat(png); err != nil || info.Size() < 10000 {
			t.Errorf("chromium's screenshot of the page: %v", err)
		}
		checkServed(t, f.ca, pageURL, "text/html", page)
		dom, err := html.Parse(bytes.NewReader(page))
		if err != nil {
			t.Fatal(err)
		}
		f.checkShowsTree(t, dom)
		if _, hidden := domAttr(findByAttr(dom, "id", "filter"), "hidden"); !hidden {
			t.Errorf("without JavaScript the filter, which needs it, is shown")
		}
	})

	t.Run("nginx", func(t *testing.T) {
		pageURL := strings.TrimSuffix(base, "/") + prefix
		checkServed(t, f.ca, pageURL, "text/html", page)

		got := openInChromium(t, chromium, pageURL, "--ignore-certificate-errors")
		if len(got.console) > 0 {
			t.Errorf("chromium logged to the console:\n%s", strings.Join(got.console, "\n"))
		}
		f.checkShowsTree(t, got.dom)

		// The client configuration names the mirror where the page is.
		cfg := domText(findByAttr(got.dom, "id", "provider-installation"))
		if !strings.Contains(cfg, fmt.Sprintf("url              = %q", pageURL)) {
			t.Errorf("provider_installation block served at %s:\n%s", pageURL, cfg)
		}
		hosts := domFind(got.dom, func(n *html.Node) bool { c, _ := domAttr(n, "class"); return c == "config host-block" })
		wantHost := replica.ServicesBlock("registry.opentofu.org", pageURL, map[string]string{
			"modules.v1":   "/" + replica.ModuleServicesPath("registry.opentofu.org"),
			"providers.v1": "/" + replica.ServicesPath("registry.opentofu.org"),
		})
		if len(hosts) != 1 || domText(hosts[0]) != wantHost {
			t.Errorf("host blocks served at %s: %d, want 1:\n%s", pageURL, len(hosts), wantHost)
			for _, h := range hosts {
				t.Logf("host block:\n%s", domText(h))
			}
		}

		// Each version's time is the Last-Modified nginx gives its document.
		client := f.ca.Client()
		cells := domFind(got.dom, func(n *html.Node) bool { _, ok := domAttr(n, "data-doc"); return ok })
		if len(cells) != len(f.versions)+len(f.modules) {
			t.Errorf("%d cells for when versions were mirrored, want %d", len(cells), len(f.versions)+len(f.modules))
		}
		for _, c := range cells {
			ref, _ := domAttr(c, "data-doc")
			u, _ := url.Parse(ref)
			docURL, _ := url.Parse(pageURL)
			resp, err := client.Head(docURL.ResolveReference(u).String())
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			lm, err := http.ParseTime(resp.Header.Get("Last-Modified"))
			if resp.StatusCode != http.StatusOK || err != nil {
				t.Errorf("HEAD %s: %s, Last-Modified %q", ref, resp.Status, resp.Header.Get("Last-Modified"))
				continue
			}
			if want := lm.UTC().Format("2006-01-02 15:04:05 UTC"); domText(c) != want {
				t.Errorf("mirrored time of %s: %q, want %q (its Last-Modified)", ref, domText(c), want)
			}
		}

		// Every link leads to the file of the tree it names, under the prefix.
		var archives int
		for _, u := range links(t, got.dom, pageURL) {
			rel, ok := strings.CutPrefix(u.Path, prefix)
			if u.Host != strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/") || !ok {
				t.Errorf("link %s leaves the tree", u)
				continue
			}
			want, err := os.ReadFile(filepath.Join(f.site, filepath.FromSlash(rel)))
			if err != nil {
				t.Errorf("link %s: %v", u, err)
				continue
			}
			resp, err := client.Get(u.String())
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
				t.Errorf("GET %s: %s (%v), not the tree's %s", u, resp.Status, err, rel)
			}
			if strings.HasSuffix(rel, ".zip") {
				archives++
			}
		}
		var want int
		for _, v := range f.versions {
			want += len(v.platforms)
		}
		if archives != want+len(f.modules) {
			t.Errorf("%d links to archives and packages, want %d", archives, want+len(f.modules))
		}
	})

	// The page changes only with the tree: a second Write leaves it alone.
	dir, err := layout.Open(f.site)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	before, err := os.Stat(filepath.Join(f.site, htmlcatalog.Path))
	if err != nil {
		t.Fatal(err)
	}
	if err := htmlcatalog.Write(context.Background(), dir.Tree, htmlcatalog.Options{}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(filepath.Join(f.site, htmlcatalog.Path))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a second Write rewrote an unchanged page")
	}
}

package htmlcatalog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/tfmirror/tfmirror/hashing"
	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/atomicfile"
	"github.com/tfmirror/tfmirror/internal/replica"
	"github.com/tfmirror/tfmirror/layout"
)

// release is a provider version to publish into a test tree.
type release struct {
	provider, version string
	platforms         []string
	keyID             string // "" with record: unsigned
	fingerprint       string // of keyID's primary key; "" for a record that names none
	noRecord          bool   // published without provenance
	filename          string // upstream file name pattern (%s is the platform); default plain
	sbom              bool   // published with SBOMs
	goVersion         string // of its executables, with sbom; "" for no build information
}

func sbomBytes(r release, plat string) []byte {
	return []byte(`{"sbom of": "` + r.provider + " " + r.version + " " + plat + `"}`)
}

func archiveBytes(r release, plat string) []byte {
	return []byte("zip of " + r.provider + " " + r.version + " " + plat)
}

func openTree(t *testing.T) *layout.Dir {
	t.Helper()
	tr, err := layout.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

func stage(t *testing.T, tr *layout.Dir, data []byte) string {
	t.Helper()
	f, err := tr.CreateStaged("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.SyncClose(f); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// h1Of is a stand-in h1: hash, distinct per archive (the catalog shows
// what the documents list and checks nothing).
func h1Of(data []byte) hashing.Hash {
	sum := sha256.Sum256(append([]byte("h1 "), data...))
	return hashing.Hash(hashing.SchemeH1 + base64.StdEncoding.EncodeToString(sum[:]))
}

// publish writes a release into tr as a build would: archives with their
// zh: and h1: hashes, kept SHA256SUMS, signature and provenance.
func publish(t *testing.T, tr *layout.Dir, r release) {
	t.Helper()
	p := addrs.MustParseProvider(r.provider)
	v := addrs.MustParseVersion(r.version)
	rel := layout.Release{Provider: p, Version: v}
	prov := layout.Provenance{Archives: map[string]layout.ProvenanceArchive{}, SigningKeys: []string{}, KeyID: r.keyID, Fingerprint: r.fingerprint}
	var sums strings.Builder
	for _, ps := range r.platforms {
		data := archiveBytes(r, ps)
		sum := sha256.Sum256(data)
		a := layout.Archive{
			Platform: addrs.MustParsePlatform(ps), Staged: stage(t, tr, data),
			Hashes: []hashing.Hash{hashing.ZH(sum), h1Of(data)},
		}
		if r.sbom {
			a.SBOM = sbomBytes(r, ps)
		}
		rel.Archives = append(rel.Archives, a)
		name := fmt.Sprintf("%s_%s_%s.zip", p.Type, r.version, ps)
		if r.filename != "" {
			name = fmt.Sprintf(r.filename, ps)
		}
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), name)
		prov.Archives[ps] = layout.ProvenanceArchive{Filename: name, H1: h1Of(data), ZH: hashing.ZH(sum), Size: int64(len(data)), GoVersion: r.goVersion}
	}
	if !r.noRecord {
		rec := &layout.Record{Sums: []byte(sums.String()), Provenance: prov}
		if r.keyID != "" {
			rec.Signature = []byte("signature")
			rec.Provenance.SigningKeys = []string{"armored key"}
		}
		rel.Record = rec
	}
	if err := tr.Publish(rel); err != nil {
		t.Fatal(err)
	}
}

// module is a module version to publish into a test tree.
type module struct {
	address, version string
	record           layout.ModuleRecord
}

func moduleZip(m module) []byte { return []byte("module zip " + m.address + " " + m.version) }

func publishModule(t *testing.T, tr *layout.Dir, m module) {
	t.Helper()
	data := moduleZip(m)
	sum := sha256.Sum256(data)
	m.record.SHA256, m.record.Size = hex.EncodeToString(sum[:]), int64(len(data))
	if m.record.Calls == nil {
		m.record.Calls = []layout.ModuleCall{}
	}
	_, err := tr.PublishModules(context.Background(), layout.Repair, []layout.ModuleRelease{{
		Module: addrs.MustParseModule(m.address), Version: addrs.MustParseVersion(m.version),
		Staged: stage(t, tr, data), Move: true, Record: m.record,
	}})
	if err != nil {
		t.Fatal(err)
	}
}

var (
	fooSigned = release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}, keyID: "0123456789ABCDEF"}
	fooNewer  = release{provider: "hashicorp/foo", version: "1.1.0", platforms: []string{"linux_amd64"}, keyID: "0123456789ABCDEF"}
	barUnsign = release{provider: "example.com/acme/bar", version: "0.1.0", platforms: []string{"linux_amd64"}}
	netModule = module{address: "acme/net/aws", version: "1.2.0", record: layout.ModuleRecord{
		Subdir:   "modules/vpc",
		Upstream: layout.ModuleUpstream{Location: "git::https://git.example/net.git?ref=v1.2.0", Commit: "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"},
		Calls:    []layout.ModuleCall{{Module: "registry.opentofu.org/acme/sub/aws", Version: "~> 2.0"}},
	}}
	subModule = module{address: "acme/sub/aws", version: "2.0.0", record: layout.ModuleRecord{
		Upstream: layout.ModuleUpstream{Location: "https://files.example/sub-2.0.0.tar.gz", ArchiveSHA256: strings.Repeat("ab", 32)},
	}}
)

// sampleTree holds two providers (one signed release of two platforms, a
// newer one, an unsigned one) and two modules with their replica.
func sampleTree(t *testing.T) *layout.Dir {
	t.Helper()
	tr := openTree(t)
	for _, r := range []release{fooSigned, fooNewer, barUnsign} {
		publish(t, tr, r)
	}
	for _, m := range []module{netModule, subModule} {
		publishModule(t, tr, m)
	}
	if _, err := replica.WriteModules(context.Background(), tr.Tree); err != nil {
		t.Fatal(err)
	}
	return tr
}

func write(t *testing.T, tr *layout.Dir, opts Options) []byte {
	t.Helper()
	if err := Write(context.Background(), tr.Tree, opts); err != nil {
		t.Fatalf("Write: %v", err)
	}
	data, err := os.ReadFile(tr.Path(Path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// ---------------------------------------------------------------------------
// Reading the page as a browser would.

func parse(t *testing.T, data []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// findAll returns the elements below n that match.
func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

func byTag(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == tag }
}

func byAttr(key, val string) func(*html.Node) bool {
	return func(n *html.Node) bool { v, ok := attr(n, key); return ok && v == val }
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func one(t *testing.T, n *html.Node, what string, match func(*html.Node) bool) *html.Node {
	t.Helper()
	found := findAll(n, match)
	if len(found) != 1 {
		t.Fatalf("%d elements for %s, want 1", len(found), what)
	}
	return found[0]
}

// resolve resolves a link of the page, served at an arbitrary prefix, to
// the path in the tree it names.
func resolve(t *testing.T, ref string) string {
	t.Helper()
	base, _ := url.Parse("https://mirror.example/some/prefix/" + Path)
	r, err := url.Parse(ref)
	if err != nil {
		t.Fatalf("link %q: %v", ref, err)
	}
	u := base.ResolveReference(r)
	rel, ok := strings.CutPrefix(u.Path, "/some/prefix/")
	if u.Host != "mirror.example" || !ok {
		t.Fatalf("link %q resolves to %s, outside the tree", ref, u)
	}
	return rel
}

// ---------------------------------------------------------------------------

// TestWriteShowsWhatTheTreeHolds checks every provider, version, platform,
// hash, key and archive link, the unsigned release, the modules with their
// records, and the client configuration.
func TestWriteShowsWhatTheTreeHolds(t *testing.T) {
	tr := sampleTree(t)
	doc := parse(t, write(t, tr, Options{}))

	for _, r := range []release{fooSigned, fooNewer, barUnsign} {
		p := addrs.MustParseProvider(r.provider)
		sec := one(t, doc, r.provider, byAttr("id", "provider-"+p.String()))
		ver := one(t, sec, r.provider+" "+r.version, byAttr("data-version", r.version))
		key := textOf(one(t, ver, "key of "+r.version, func(n *html.Node) bool { c, _ := attr(n, "class"); return strings.HasPrefix(c, "key") }))
		if r.keyID != "" && key != "key "+r.keyID {
			t.Errorf("%s %s: key %q, want the key ID %s", r.provider, r.version, key, r.keyID)
		}
		if r.keyID == "" && key != "unsigned" {
			t.Errorf("%s %s: key %q, want unsigned", r.provider, r.version, key)
		}
		for _, ps := range r.platforms {
			row := one(t, ver, ps, byAttr("data-platform", ps))
			data := archiveBytes(r, ps)
			sum := sha256.Sum256(data)
			text := textOf(row)
			for _, want := range []string{ps, string(hashing.ZH(sum)), string(h1Of(data)), fmt.Sprintf("%d B", len(data))} {
				if !strings.Contains(text, want) {
					t.Errorf("%s %s %s: row %q lacks %q", r.provider, r.version, ps, text, want)
				}
			}
			link := one(t, row, "archive link", byTag("a"))
			ref, _ := attr(link, "href")
			got, err := os.ReadFile(tr.Path(resolve(t, ref)))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s %s %s: link %q does not lead to the archive (%v)", r.provider, r.version, ps, ref, err)
			}
		}
	}
	// Newest first.
	sec := one(t, doc, "foo", byAttr("id", "provider-registry.opentofu.org/hashicorp/foo"))
	var order []string
	for _, n := range findAll(sec, func(n *html.Node) bool { _, ok := attr(n, "data-version"); return ok }) {
		v, _ := attr(n, "data-version")
		order = append(order, v)
	}
	if !slices.Equal(order, []string{"1.1.0", "1.0.0"}) {
		t.Errorf("foo's versions in the order %q, want newest first", order)
	}

	for _, m := range []module{netModule, subModule} {
		a := addrs.MustParseModule(m.address)
		sec := one(t, doc, m.address, byAttr("id", "module-"+a.String()))
		row := one(t, sec, m.address+" "+m.version, byAttr("data-version", m.version))
		data := moduleZip(m)
		sum := sha256.Sum256(data)
		text := textOf(row)
		want := []string{m.version, hex.EncodeToString(sum[:]), fmt.Sprintf("%d B", len(data)), m.record.Upstream.Location}
		if c := m.record.Upstream.Commit; c != "" {
			want = append(want, c, m.record.Subdir, "registry.opentofu.org/acme/sub/aws ~> 2.0")
		}
		if s := m.record.Upstream.ArchiveSHA256; s != "" {
			want = append(want, s)
		}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("module %s %s: row %q lacks %q", m.address, m.version, text, w)
			}
		}
		var pkg string
		for _, l := range findAll(row, byTag("a")) {
			if ref, _ := attr(l, "href"); strings.HasSuffix(ref, ".zip") {
				pkg = ref
			}
		}
		if got, err := os.ReadFile(tr.Path(resolve(t, pkg))); err != nil || !bytes.Equal(got, data) {
			t.Errorf("module %s %s: link %q does not lead to the package (%v)", m.address, m.version, pkg, err)
		}
	}

	cfg := textOf(one(t, doc, "provider_installation", byAttr("id", "provider-installation")))
	if !strings.Contains(cfg, "network_mirror") || !strings.Contains(cfg, `url              = "`+Placeholder+`"`) {
		t.Errorf("provider_installation block:\n%s", cfg)
	}
	blocks := findAll(doc, byAttr("class", "config host-block"))
	if len(blocks) != 1 {
		t.Fatalf("%d host blocks, want 1 (registry.opentofu.org's module replica)", len(blocks))
	}
	want := replica.ServicesBlock("registry.opentofu.org", Placeholder, map[string]string{"modules.v1": "/" + replica.ModuleServicesPath("registry.opentofu.org")})
	if got := textOf(blocks[0]); got != want {
		t.Errorf("host block:\n%s\nwant:\n%s", got, want)
	}
	if body := one(t, doc, "body", byTag("body")); !slices.Contains(body.Attr, html.Attribute{Key: "data-placeholder", Val: Placeholder}) {
		t.Errorf("body lacks data-placeholder for the script")
	}
	summary := textOf(one(t, doc, "summary", byAttr("id", "summary")))
	if want := "2 providers, 3 versions, 4 packages; 2 modules, 2 module versions."; summary != want {
		t.Errorf("summary %q, want %q", summary, want)
	}
}

// TestWriteMirrorURLAndProviderReplica: with the mirror's URL, the
// configuration names it; a host whose provider replica is in the tree
// gets providers.v1 in its block.
func TestWriteMirrorURLAndProviderReplica(t *testing.T) {
	tr := sampleTree(t)
	foo := addrs.MustParseProvider("hashicorp/foo")
	if err := tr.Put(context.Background(), replica.VersionsPath(foo), []byte(`{"versions":[]}`)); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, write(t, tr, Options{MirrorURL: "https://mirror.corp.example/tf"}))
	cfg := textOf(one(t, doc, "provider_installation", byAttr("id", "provider-installation")))
	if !strings.Contains(cfg, `"https://mirror.corp.example/tf/"`) {
		t.Errorf("provider_installation block lacks the mirror URL with a slash:\n%s", cfg)
	}
	block := textOf(one(t, doc, "host block", byAttr("class", "config host-block")))
	want := replica.ServicesBlock("registry.opentofu.org", "https://mirror.corp.example/tf/", map[string]string{
		"modules.v1":   "/" + replica.ModuleServicesPath("registry.opentofu.org"),
		"providers.v1": "/" + replica.ServicesPath("registry.opentofu.org"),
	})
	if block != want {
		t.Errorf("host block:\n%s\nwant:\n%s", block, want)
	}
	if body := one(t, doc, "body", byTag("body")); len(body.Attr) != 0 {
		t.Errorf("body has %v; no placeholder to replace when the URL is given", body.Attr)
	}
	if strings.Contains(textOf(doc), Placeholder) {
		t.Errorf("the page still shows the placeholder")
	}

	for _, bad := range []string{"ftp://x/", "mirror.example", "https://user:pw@x/", "https://x/?q=1", "https:///path"} {
		if err := Write(context.Background(), tr.Tree, Options{MirrorURL: bad}); err == nil {
			t.Errorf("MirrorURL %q accepted", bad)
		}
	}
}

// TestWriteEscapesHostileInput: what the tree's files say is shown as text
// and never becomes markup, a link or script.
func TestWriteEscapesHostileInput(t *testing.T) {
	tr := openTree(t)
	const evil = `"><script>alert(1)</script><img src=x onerror=alert(2)>`
	publish(t, tr, release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64"}, keyID: evil, filename: "</td>" + evil + "%s"})
	publishModule(t, tr, module{address: "acme/evil/aws", version: "1.0.0", record: layout.ModuleRecord{
		Subdir:   "<b>sub</b>",
		Upstream: layout.ModuleUpstream{Location: "javascript:alert(3)//" + evil, Commit: evil},
	}})
	// index.json lists a "version" that is markup.
	foo := addrs.MustParseProvider("hashicorp/foo")
	if err := tr.Put(context.Background(), layout.IndexPath(foo), []byte(`{"versions":{"1.0.0":{},"<script>alert(4)</script>":{}}}`)); err != nil {
		t.Fatal(err)
	}
	data := write(t, tr, Options{})
	if n := bytes.Count(data, []byte("<script")); n != 1 {
		t.Errorf("%d script elements in the page, want only its own", n)
	}
	for _, bad := range []string{"<img", "<b>", `href="javascript`} {
		if bytes.Contains(data, []byte(bad)) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	doc := parse(t, data)
	if n := len(findAll(doc, byTag("script"))); n != 1 {
		t.Errorf("%d script elements after parsing, want 1", n)
	}
	if n := len(findAll(doc, byTag("img"))) + len(findAll(doc, byTag("b"))); n != 0 {
		t.Errorf("%d injected elements after parsing", n)
	}
	text := textOf(doc)
	problems := textOf(one(t, doc, "problems", byAttr("id", "problems")))
	if !strings.Contains(problems, `"<script>alert(4)</script>", which is not a version`) {
		t.Errorf("problems %q do not name the index's bad version", problems)
	}
	for _, want := range []string{"key " + evil, "</td>" + evil + "linux_amd64", "javascript:alert(3)//" + evil, "<b>sub</b>"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page's text lacks %q, shown as text", want)
		}
	}
	for _, a := range findAll(doc, byTag("a")) {
		if ref, _ := attr(a, "href"); !strings.HasPrefix(ref, "./") && !strings.HasPrefix(ref, "#") {
			t.Errorf("link %q: every link is relative to the page", ref)
		}
	}
}

// TestWriteIsDeterministic: the page is a function of the tree's content:
// writing again gives the same bytes and leaves the file alone, and the
// same content written at another time (other mtimes) gives the same page.
func TestWriteIsDeterministic(t *testing.T) {
	tr := sampleTree(t)
	first := write(t, tr, Options{})
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(tr.Path(Path), old, old); err != nil {
		t.Fatal(err)
	}
	if again := write(t, tr, Options{}); !bytes.Equal(again, first) {
		t.Fatalf("a second Write gives other bytes")
	}
	if info, err := os.Stat(tr.Path(Path)); err != nil || !info.ModTime().Equal(old) {
		t.Errorf("a second Write rewrote an unchanged page")
	}

	other := sampleTree(t)
	touchAll(t, other.Root(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	if got := write(t, other, Options{}); !bytes.Equal(got, first) {
		t.Errorf("the same tree written at another time gives another page")
	}
	if bytes.Contains(first, []byte(time.Now().UTC().Format("2006-01-02"))) {
		t.Errorf("the page holds today's date")
	}

	// A change in the tree changes the page, and Write writes it.
	publish(t, tr, release{provider: "hashicorp/foo", version: "2.0.0", platforms: []string{"linux_amd64"}, keyID: "0123456789ABCDEF"})
	if got := write(t, tr, Options{}); bytes.Equal(got, first) || !bytes.Contains(got, []byte(`data-version="2.0.0"`)) {
		t.Errorf("the page did not change with the tree")
	}
}

func touchAll(t *testing.T, root string, when time.Time) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteTimes: by default the page names each version's document for
// its script and holds no time; EmbedTimes writes the documents' times.
func TestWriteTimes(t *testing.T) {
	tr := sampleTree(t)
	doc := parse(t, write(t, tr, Options{}))
	cells := findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-doc"); return ok })
	var docs []string
	for _, c := range cells {
		v, _ := attr(c, "data-doc")
		docs = append(docs, resolve(t, v))
	}
	slices.Sort(docs)
	want := []string{
		"example.com/acme/bar/0.1.0.json",
		"modules/registry.opentofu.org/acme/net/aws/1.2.0.json",
		"modules/registry.opentofu.org/acme/sub/aws/2.0.0.json",
		"registry.opentofu.org/hashicorp/foo/1.0.0.json",
		"registry.opentofu.org/hashicorp/foo/1.1.0.json",
	}
	if !slices.Equal(docs, want) {
		t.Errorf("documents named for the script %q, want %q", docs, want)
	}
	if n := len(findAll(doc, byTag("time"))); n != 0 {
		t.Errorf("%d time elements without EmbedTimes", n)
	}

	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, rel := range want {
		if err := os.Chtimes(tr.Path(rel), at, at); err != nil {
			t.Fatal(err)
		}
	}
	doc = parse(t, write(t, tr, Options{EmbedTimes: true}))
	times := findAll(doc, byTag("time"))
	if len(times) != len(want) {
		t.Fatalf("%d time elements with EmbedTimes, want %d", len(times), len(want))
	}
	for _, tm := range times {
		if dt, _ := attr(tm, "datetime"); dt != "2024-05-06T07:08:09Z" || textOf(tm) != "2024-05-06 07:08:09 UTC" {
			t.Errorf("time %q (%s), want 2024-05-06 07:08:09 UTC", textOf(tm), dt)
		}
	}
	if n := len(cells) - len(findAll(doc, func(n *html.Node) bool { _, ok := attr(n, "data-doc"); return ok })); n != len(cells) {
		t.Errorf("EmbedTimes still leaves times to the script")
	}
}

// TestWriteBoundsOlderVersions: beyond Detailed, versions are listed
// compactly in a collapsed details element, without hashes.
func TestWriteBoundsOlderVersions(t *testing.T) {
	tr := openTree(t)
	var releases []release
	for i := range 5 {
		r := release{provider: "hashicorp/foo", version: fmt.Sprintf("1.%d.0", i), platforms: []string{"linux_amd64", "darwin_arm64"}, keyID: "0123456789ABCDEF"}
		publish(t, tr, r)
		releases = append(releases, r)
	}
	for i := range 3 {
		publishModule(t, tr, module{address: "acme/net/aws", version: fmt.Sprintf("1.%d.0", i), record: layout.ModuleRecord{Upstream: layout.ModuleUpstream{Location: "https://x.example/net.zip"}}})
	}
	full := write(t, tr, Options{Detailed: -1})
	data := write(t, tr, Options{Detailed: 2})
	if len(data) >= len(full) {
		t.Errorf("the bounded page has %d bytes, the full one %d", len(data), len(full))
	}
	doc := parse(t, data)
	older := findAll(doc, byTag("details"))
	if len(older) != 2 {
		t.Fatalf("%d details elements, want one per provider and module with older versions", len(older))
	}
	if _, open := attr(older[0], "open"); open {
		t.Errorf("older versions are not collapsed")
	}
	foo := one(t, doc, "foo", byAttr("id", "provider-registry.opentofu.org/hashicorp/foo"))
	for i, r := range releases {
		row := one(t, foo, r.version, byAttr("data-version", r.version))
		data := archiveBytes(r, "linux_amd64")
		sum := sha256.Sum256(data)
		inOlder := len(findAll(older[0], byAttr("data-version", r.version))) == 1
		hasHash := strings.Contains(textOf(row), string(hashing.ZH(sum)))
		if detailed := i >= 3; inOlder == detailed || hasHash != detailed {
			t.Errorf("version %s: in details %v, hashes shown %v; want only the 2 newest in full", r.version, inOlder, hasHash)
		}
		if !strings.Contains(textOf(row), "key 0123456789ABCDEF") {
			t.Errorf("version %s: no key", r.version)
		}
		if links := findAll(row, byTag("a")); len(links) < 3 {
			t.Errorf("version %s: %d links, want its document and both archives", r.version, len(links))
		}
	}
	if n := len(findAll(older[1], byAttr("data-version", "1.0.0"))); n != 1 {
		t.Errorf("the oldest module version is not in the module's details")
	}
	if n := len(findAll(doc, byAttr("class", "version"))); n != 2 {
		t.Errorf("%d provider versions in full, want 2", n)
	}
	if got := len(write(t, tr, Options{})); got != len(full) {
		t.Errorf("with the default (%d) every one of 5 versions is in full: %d bytes, want %d", DefaultDetailed, got, len(full))
	}
}

// TestWriteWithoutProvenance: a release published without provenance is
// shown, with its key unknown, not as unsigned.
func TestWriteWithoutProvenance(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64"}, noRecord: true})
	doc := parse(t, write(t, tr, Options{}))
	ver := one(t, doc, "1.0.0", byAttr("data-version", "1.0.0"))
	key := one(t, ver, "key", func(n *html.Node) bool { c, _ := attr(n, "class"); return c == "key" })
	if textOf(key) != "unknown" {
		t.Errorf("key %q, want unknown", textOf(key))
	}
}

// TestWriteMissingArchive: an archive the document lists and the tree
// lacks is said so, without a link.
func TestWriteMissingArchive(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, fooSigned)
	p, v := addrs.MustParseProvider(fooSigned.provider), addrs.MustParseVersion(fooSigned.version)
	if err := os.Remove(tr.Path(layout.ArchivePath(p, v, addrs.MustParsePlatform("linux_amd64")))); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, write(t, tr, Options{}))
	row := one(t, doc, "linux_amd64", byAttr("data-platform", "linux_amd64"))
	if !strings.Contains(textOf(row), "missing") || len(findAll(row, byTag("a"))) != 0 {
		t.Errorf("row for the missing archive: %q", textOf(row))
	}
}

// TestWriteMissingVersionDocument: a version index.json lists without its
// document is shown as a problem.
func TestWriteMissingVersionDocument(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, fooSigned)
	if err := os.Remove(tr.Path(layout.VersionPath(addrs.MustParseProvider(fooSigned.provider), addrs.MustParseVersion(fooSigned.version)))); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, write(t, tr, Options{}))
	ver := one(t, doc, "1.0.0", byAttr("data-version", "1.0.0"))
	if p := one(t, ver, "problem", byAttr("class", "problem")); !strings.Contains(textOf(p), "1.0.0.json is missing") {
		t.Errorf("problem %q", textOf(p))
	}
}

func TestWriteEmptyTree(t *testing.T) {
	tr := openTree(t)
	doc := parse(t, write(t, tr, Options{}))
	text := textOf(doc)
	for _, want := range []string{"This mirror holds no providers.", "This mirror holds no modules.", "provider_installation"} {
		if !strings.Contains(text, want) {
			t.Errorf("empty tree's page lacks %q", want)
		}
	}
}

// TestWriteRefusesHostNamedIndexHTML: a provider host named like the page
// has its directory where the page goes.
func TestWriteRefusesHostNamedIndexHTML(t *testing.T) {
	tr := openTree(t)
	publish(t, tr, release{provider: "index.html/acme/foo", version: "1.0.0", platforms: []string{"linux_amd64"}})
	err := Write(context.Background(), tr.Tree, Options{})
	if err == nil || !strings.Contains(err.Error(), `host named "index.html"`) {
		t.Errorf("Write: %v, want a refusal naming the host", err)
	}
}

// TestCSPAllowsExactlyThePagesStyleAndScript: the policy's hashes are
// those of the style and script the page holds, so a browser runs them
// and nothing else.
func TestCSPAllowsExactlyThePagesStyleAndScript(t *testing.T) {
	tr := sampleTree(t)
	doc := parse(t, write(t, tr, Options{}))
	meta := one(t, doc, "CSP meta", byAttr("http-equiv", "Content-Security-Policy"))
	policy, _ := attr(meta, "content")
	for _, tag := range []string{"style", "script"} {
		body := textOf(one(t, doc, tag, byTag(tag)))
		if !strings.Contains(policy, tag+"-src '"+cspHash(body)+"'") {
			t.Errorf("the policy %q does not allow the page's %s by its hash %s", policy, tag, cspHash(body))
		}
	}
	for _, want := range []string{"default-src 'none'", "connect-src 'self'", "base-uri 'none'"} {
		if !strings.Contains(policy, want) {
			t.Errorf("the policy %q lacks %q", policy, want)
		}
	}
}

// Each package's row links its SBOM and says what its executable was
// built with, "no build information" for one that is not a Go program,
// and "no SBOM" for a package published without one.
func TestWriteShowsEachPackagesSBOM(t *testing.T) {
	tr := openTree(t)
	goRel := release{provider: "hashicorp/foo", version: "1.0.0", platforms: []string{"linux_amd64", "darwin_arm64"}, keyID: "ABCD", sbom: true, goVersion: "go1.22.5"}
	script := release{provider: "hashicorp/foo", version: "1.1.0", platforms: []string{"linux_amd64"}, keyID: "ABCD", sbom: true}
	old := release{provider: "hashicorp/foo", version: "0.9.0", platforms: []string{"linux_amd64"}, keyID: "ABCD"}
	for _, r := range []release{goRel, script, old} {
		publish(t, tr, r)
	}
	doc := parse(t, write(t, tr, Options{}))
	for _, c := range []struct {
		r    release
		want string
	}{{goRel, "built with go1.22.5"}, {script, "no build information"}, {old, "no SBOM"}} {
		ver := one(t, doc, c.r.version, byAttr("data-version", c.r.version))
		for _, ps := range c.r.platforms {
			row := one(t, ver, ps, byAttr("data-platform", ps))
			cell := one(t, row, "SBOM cell", byAttr("class", "sbom"))
			if text := textOf(cell); !strings.Contains(text, c.want) {
				t.Errorf("%s %s: SBOM cell %q lacks %q", c.r.version, ps, text, c.want)
			}
			links := findAll(cell, byTag("a"))
			if !c.r.sbom {
				if len(links) != 0 {
					t.Errorf("%s %s: a package without an SBOM links one", c.r.version, ps)
				}
				continue
			}
			if len(links) != 1 {
				t.Fatalf("%s %s: %d links in the SBOM cell; want one", c.r.version, ps, len(links))
			}
			ref, _ := attr(links[0], "href")
			got, err := os.ReadFile(tr.Path(resolve(t, ref)))
			if err != nil || !bytes.Equal(got, sbomBytes(c.r, ps)) {
				t.Errorf("%s %s: link %q does not lead to the SBOM (%v)", c.r.version, ps, ref, err)
			}
		}
	}
}

// TestWriteShowsDeprecationsAndKeyChanges: a provider's kept warnings and
// the keys that signed its releases, as catalog.json lists them
// (layout.Tree.DescribeCatalog), are in its section: the warnings
// escaped, a key change marked with the version that first had the new
// key and both fingerprints.
func TestWriteShowsDeprecationsAndKeyChanges(t *testing.T) {
	tr := openTree(t)
	const fpA, fpB = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	for _, r := range []release{
		{provider: "hashicorp/foo", version: "1.0.0", keyID: "AAAAAAAAAAAAAAAA", fingerprint: fpA},
		{provider: "hashicorp/foo", version: "1.1.0", keyID: "AAAAAAAAAAAAAAAA", fingerprint: fpA},
		{provider: "hashicorp/foo", version: "2.0.0", keyID: "BBBBBBBBBBBBBBBB", fingerprint: fpB},
		{provider: "hashicorp/bar", version: "1.0.0", keyID: "AAAAAAAAAAAAAAAA", fingerprint: fpA},
	} {
		r.platforms = []string{"linux_amd64"}
		publish(t, tr, r)
	}
	ctx := context.Background()
	foo := addrs.MustParseProvider("hashicorp/foo")
	const evil = "Deprecated: <script>alert(1)</script> use \x1b[31macme/new"
	if err := tr.RecordWarnings(ctx, foo, []string{evil}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.DescribeCatalog(ctx); err != nil {
		t.Fatal(err)
	}
	doc := parse(t, write(t, tr, Options{}))
	section := func(name string) func(*html.Node) bool {
		return func(n *html.Node) bool { return byTag("article")(n) && byAttr("data-name", name)(n) }
	}
	fooSection := one(t, doc, "foo's section", section("registry.opentofu.org/hashicorp/foo"))
	// As text, the terminal's escape sequence escaped too.
	if got, want := textOf(one(t, fooSection, "foo's warning", byAttr("class", "warning"))), strings.ReplaceAll(evil, "\x1b", `\x1b`); got != want {
		t.Errorf("foo's warning %q, want %q as text", got, want)
	}
	if n := len(findAll(doc, byTag("script"))); n != 1 {
		t.Errorf("%d script elements, want only the page's own", n)
	}
	change := textOf(one(t, fooSection, "foo's key change", byAttr("class", "signer key-change")))
	for _, want := range []string{"BBBBBBBBBBBBBBBB", "2.0.0", fpA, fpB} {
		if !strings.Contains(change, want) {
			t.Errorf("the key change row %q lacks %q", change, want)
		}
	}
	first := textOf(one(t, fooSection, "foo's first key", byAttr("class", "signer")))
	if !strings.Contains(first, "1.0.0 to 1.1.0 (2 releases)") || !strings.Contains(first, "first key") {
		t.Errorf("foo's first key row %q", first)
	}
	barSection := one(t, doc, "bar's section", section("registry.opentofu.org/hashicorp/bar"))
	if len(findAll(barSection, byAttr("class", "signer key-change"))) != 0 || len(findAll(barSection, byAttr("class", "warning"))) != 0 {
		t.Error("bar, one key and no warnings, shows a key change or a warning")
	}
}

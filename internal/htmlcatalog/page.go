package htmlcatalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"strings"

	"github.com/tfmirror/tfmirror/internal/addrs"
	"github.com/tfmirror/tfmirror/internal/plural"
	"github.com/tfmirror/tfmirror/layout"
)

// page is what the template shows.
type page struct {
	CSP    string
	Style  template.CSS
	Script template.JS

	MirrorURL     string
	Placeholder   string // the placeholder in the configuration, "" when MirrorURL was given
	ProviderBlock string
	HostBlocks    []hostBlock
	EmbedTimes    bool

	Providers      []*providerView
	Versions       int // provider versions
	Packages       int // provider archives
	Modules        []*moduleView
	ModuleVersions int
	Problems       []string
	// Changes are the newest change records; Feed and ChangeIndex link
	// to the Atom feed and the index when there are any.
	Changes           []*changeView
	Feed, ChangeIndex string

	services map[addrs.Hostname]map[string]string // replica services per host
}

type hostBlock struct{ Host, Block string }

// section is what a provider's and a module's part of the page share:
// the address, the link to the index, and the versions (of view V), the
// newest in full and the older ones compactly.
type section[V any] struct {
	Address  string
	Index    string // link to index.json
	Detailed []V
	Older    []V

	all     []V    // newest first
	kind    string // "provider" or "module", for the ID
	host    addrs.Hostname
	replica *offer
}

func (s *section[V]) split(n int) {
	s.Detailed, s.Older = s.all[:min(n, len(s.all))], s.all[min(n, len(s.all)):]
}

// Anchor, ID and Filter name the section.
func (s *section[V]) Anchor() string { return "#" + s.ID() }
func (s *section[V]) ID() string     { return s.kind + "-" + s.Address }
func (s *section[V]) Filter() string { return strings.ToLower(s.Address) }
func (s *section[V]) Count() int     { return len(s.all) }

type providerView struct {
	section[*versionView]
	// Deprecations are the warnings the origin's version list gave of the
	// provider, and Signers the primary keys that signed its releases
	// (more than one: a key change), as catalog.json says.
	Deprecations []string
	Signers      []layout.CatalogSigner
}

type versionView struct {
	Version   string
	Doc       string // link to <version>.json
	Key       string // key ID, "unsigned" or "unknown"
	KeyNote   string
	Signed    bool
	When      when
	Platforms []*platformView
	Problem   string

	packages int
}

type platformView struct {
	Platform string
	Href     string // link to the archive; "" when it is not in the tree
	Size     string
	Hashes   []string
	Upstream string // the archive's name in the upstream SHA256SUMS
	Problem  string
	// SBOM links the package's SBOM, "" when the provenance names none
	// (published before tfmirror made SBOMs); Build says what its
	// executable was built with: the Go version, or that it has no build
	// information.
	SBOM, Build string
	// Advisories are the package's known vulnerabilities, as the last
	// build with a vulnerability database that read it recorded them.
	Advisories []advisoryView
}

// advisoryView is one known vulnerability of a package.
type advisoryView struct {
	ID, Module, Found, Fixed string
	Title                    string // summary and aliases
}

// Name is the archive's file name.
func (pl *platformView) Name() string {
	return pl.Href[strings.LastIndex(pl.Href, "/")+1:]
}

// when is when a version was mirrored: embedded (Shown), or left to the
// page's script, which asks the host for Doc's Last-Modified.
type when struct {
	Doc   string // link to the document, for the script
	Time  string // RFC 3339, when embedded
	Shown string
}

type moduleView struct {
	section[*moduleVersionView]
	Source string // the address as a module block's source names it
}

type moduleVersionView struct {
	Version       string
	Doc           string // link to the record
	Href          string // link to the package
	Size          string
	SHA256        string
	Subdir        string
	Location      string
	Commit        string
	ArchiveSHA256 string
	Calls         []string
	When          when
	Problem       string
}

// style is the page's only CSS.
const style = `
:root{color-scheme:light dark;--muted:#666;--line:#ccc;--accent:#0a5}
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:78rem;padding:0 1rem 3rem}
h1{margin:1.2rem 0 .2rem}h2{border-bottom:2px solid var(--line);padding-bottom:.2rem;margin-top:2.2rem}
h3{margin:1.6rem 0 .3rem;word-break:break-all}h4{margin:1rem 0 .3rem;font-size:1rem}
code,pre,.hash{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:rgba(127,127,127,.12);padding:.6rem .8rem;overflow-x:auto}
table{border-collapse:collapse;width:100%;margin:.3rem 0}
th,td{border-bottom:1px solid var(--line);padding:.25rem .5rem;text-align:left;vertical-align:top}
th{font-weight:600;font-size:.85rem}
td.hashes,td.digest{word-break:break-all}.size{white-space:nowrap}
ul.hashes{list-style:none;margin:0;padding:0}
.meta,.note,.when{color:var(--muted);font-size:.85rem}
.key{font-size:.85rem;padding:0 .3rem;border:1px solid var(--line);border-radius:3px}
.key.signed{border-color:var(--accent)}
.problem{color:#c30}
nav ul{columns:18rem;padding-left:1.2rem}
details{margin:.5rem 0}summary{cursor:pointer}
#filter{font-size:1rem;padding:.3rem .5rem;width:min(30rem,100%)}
[hidden]{display:none!important}
`

// script filters by address, puts the page's location in the client
// configuration when it shows the placeholder, and shows when each
// version was mirrored from the host's Last-Modified of its document: at
// once for up to 100 versions, else for each row when it scrolls
// into view, so that a huge mirror's page makes no request for rows
// nobody looks at. Without it the page is complete but for those times.
const script = `
(function(){
"use strict";
var f=document.getElementById("filter");
if(f){f.hidden=false;f.addEventListener("input",function(){
var q=f.value.trim().toLowerCase();
document.querySelectorAll("[data-name]").forEach(function(e){e.hidden=q!==""&&e.getAttribute("data-name").indexOf(q)<0;});});}
if(!/^https?:$/.test(location.protocol))return;
var base=location.href.replace(/[?#].*$/,"").replace(/[^\/]*$/,"");
var ph=document.body.getAttribute("data-placeholder");
if(ph)document.querySelectorAll("pre.config").forEach(function(p){p.textContent=p.textContent.split(ph).join(base);});
var cells=document.querySelectorAll("[data-doc]");
if(!window.fetch)return;
function stamp(c){
fetch(c.getAttribute("data-doc"),{method:"HEAD",cache:"no-cache"}).then(function(r){
var d=r.ok&&r.headers.get("Last-Modified");if(!d)return;
c.textContent=new Date(d).toISOString().replace("T"," ").slice(0,19)+" UTC";c.title="Last-Modified of "+c.getAttribute("data-doc");
}).catch(function(){});}
if(cells.length<=100||!window.IntersectionObserver){cells.forEach(stamp);return;}
var io=new IntersectionObserver(function(es){es.forEach(function(e){
if(e.isIntersecting){io.unobserve(e.target);stamp(e.target);}});});
cells.forEach(function(c){io.observe(c);});
})();
`

// csp allows nothing but the page's own style and script, and requests to
// its own origin (the script's HEAD requests).
var csp = fmt.Sprintf("default-src 'none'; style-src '%s'; script-src '%s'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'",
	cspHash(style), cspHash(script))

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

func render(pg *page) ([]byte, error) {
	pg.CSP, pg.Style, pg.Script = csp, template.CSS(style), template.JS(script)
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, pg); err != nil {
		return nil, fmt.Errorf("render %s: %w", Path, err)
	}
	return b.Bytes(), nil
}

var pageTemplate = template.Must(template.New(Path).Funcs(template.FuncMap{"plural": plural.Count}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{{.CSP}}">
<meta name="generator" content="tfmirror">
<title>Mirror catalog</title>
<style>{{.Style}}</style>
</head>
<body{{with .Placeholder}} data-placeholder="{{.}}"{{end}}>
<header>
<h1>Mirror catalog</h1>
<p class="meta" id="summary">{{plural (len .Providers) "provider"}}, {{plural .Versions "version"}}, {{plural .Packages "package"}}; {{plural (len .Modules) "module"}}, {{plural .ModuleVersions "module version"}}.</p>
<input id="filter" type="search" placeholder="Filter by address" aria-label="Filter by address" hidden>
</header>
<nav>
<h2>Contents</h2>
<ul>
<li><a href="#use">Use this mirror</a></li>
{{- if .Changes}}
<li><a href="#changes">Recent changes</a></li>
{{- end}}
{{- range .Providers}}
<li data-name="{{.Filter}}"><a href="{{.Anchor}}">{{.Address}}</a> <span class="meta">({{.Count}})</span></li>
{{- end}}
{{- range .Modules}}
<li data-name="{{.Filter}}"><a href="{{.Anchor}}">module {{.Address}}</a> <span class="meta">({{.Count}})</span></li>
{{- end}}
</ul>
</nav>

<section id="use">
<h2>Use this mirror</h2>
<p>Install providers from it: in the CLI configuration (<code>~/.tofurc</code>, <code>~/.terraformrc</code> or the file <code>TF_CLI_CONFIG_FILE</code> names):</p>
<pre class="config" id="provider-installation">{{.ProviderBlock}}</pre>
{{- if .HostBlocks}}
<p>Install through the registry replica, with no change to the code (modules, and providers where the replica serves them): add, in the same file,</p>
{{- range .HostBlocks}}
<pre class="config host-block" data-host="{{.Host}}">{{.Block}}</pre>
{{- end}}
{{- end}}
{{- with .Placeholder}}
<p class="note">Replace <code>{{.}}</code> with the URL the mirror is published at.</p>
{{- end}}
<p class="note">Mirrored: when the version's document was last written{{if .EmbedTimes}}, as the store reported it when this page was written{{else}}, as the host serving this page reports it (shown over HTTP(S) with JavaScript; not from a local file){{end}}.
Key: the OpenPGP key whose signature over the release's SHA256SUMS was verified when it was mirrored; each provider lists the primary keys that signed its releases, and marks a key change.</p>
</section>

{{- if .Changes}}

<section id="changes">
<h2>Recent changes</h2>
<p class="meta">What the last runs that changed the mirror did · <a href="{{.Feed}}">Atom feed</a> · <a href="{{.ChangeIndex}}">index.json</a></p>
<ul class="changes">
{{- range .Changes}}
<li class="change" data-record="{{.Path}}"><time datetime="{{.Time}}">{{.Shown}}</time> <a href="{{.Href}}">{{.Summary}}</a>{{with .Sig}} <span class="meta">· <a href="{{.}}">signature</a></span>{{end}}
{{- with .Lines}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>{{end}}</li>
{{- end}}
</ul>
</section>
{{- end}}

<section id="providers">
<h2>Providers</h2>
{{- if not .Providers}}
<p>This mirror holds no providers.</p>
{{- end}}
{{- range .Providers}}
<article class="provider" id="{{.ID}}" data-name="{{.Filter}}">
<h3>{{.Address}}</h3>
<p class="meta">{{plural .Count "version"}} · <a href="{{.Index}}">index.json</a></p>
{{- with .Deprecations}}
<div class="deprecation problem"><strong>The registry warns of this provider:</strong>
<ul>{{range .}}<li class="warning">{{.}}</li>{{end}}</ul></div>
{{- end}}
{{- with .Signers}}
<table class="signers">
<thead><tr><th>Signing key</th><th>Fingerprint</th><th>Releases</th><th>Key change</th></tr></thead>
<tbody>
{{- range $s := .}}
<tr class="signer{{if $s.Replaced}} key-change{{end}}" data-key="{{$s.KeyID}}"><td><span class="key signed">{{$s.KeyID}}</span></td><td><code class="hash">{{$s.Fingerprint}}</code></td><td>{{$s.FirstVersion}}{{if ne $s.FirstVersion $s.LastVersion}} to {{$s.LastVersion}}{{end}} ({{plural $s.Releases "release"}})</td><td>{{with $s.Replaced}}<span class="problem">new key from {{$s.FirstVersion}}: <code class="hash">{{$s.KeyName}}</code> replaced <code class="hash">{{.}}</code></span>{{else}}<span class="meta">first key</span>{{end}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- range .Detailed}}
<div class="version" data-version="{{.Version}}">
<h4>{{.Version}} {{template "key" .}} <span class="meta">· <a href="{{.Doc}}">{{.Version}}.json</a> · mirrored {{template "when" .When}}</span></h4>
{{- with .Problem}}
<p class="problem">{{.}}</p>
{{- end}}
<table class="platforms">
<thead><tr><th>Platform</th><th>Archive</th><th>Size</th><th>Hashes</th><th>SBOM</th></tr></thead>
<tbody>
{{- range .Platforms}}
<tr data-platform="{{.Platform}}">
<td>{{.Platform}}</td>
<td>{{if .Href}}<a href="{{.Href}}">{{.Name}}</a>{{end}}{{with .Upstream}}<div class="meta">upstream: {{.}}</div>{{end}}{{with .Problem}}<div class="problem">{{.}}</div>{{end}}</td>
<td class="size">{{.Size}}</td>
<td class="hashes"><ul class="hashes">{{range .Hashes}}<li><code class="hash">{{.}}</code></li>{{end}}</ul></td>
<td class="sbom">{{if .SBOM}}<a href="{{.SBOM}}">SBOM</a><div class="meta">{{.Build}}</div>{{else}}<span class="meta">no SBOM</span>{{end}}
{{- with .Advisories}}<ul class="advisories problem">{{range .}}<li class="advisory" title="{{.Title}}">{{.ID}} <span class="meta">{{.Module}} {{.Found}}{{with .Fixed}}, fixed in {{.}}{{else}}, no fix{{end}}</span></li>{{end}}</ul>{{end}}</td>
</tr>
{{- end}}
</tbody>
</table>
</div>
{{- end}}
{{- if .Older}}
<details class="older">
<summary>{{plural (len .Older) "older version"}} (hashes in their documents)</summary>
<table>
<thead><tr><th>Version</th><th>Key</th><th>Mirrored</th><th>Platforms</th></tr></thead>
<tbody>
{{- range .Older}}
<tr data-version="{{.Version}}"><td><a href="{{.Doc}}">{{.Version}}</a>{{with .Problem}} <span class="problem">({{.}})</span>{{end}}</td><td>{{template "key" .}}</td><td>{{template "when" .When}}</td><td>{{range $i, $p := .Platforms}}{{if $i}}, {{end}}{{if .Href}}<a href="{{.Href}}">{{.Platform}}</a>{{else}}{{.Platform}} <span class="problem">({{.Problem}})</span>{{end}}{{end}}</td></tr>
{{- end}}
</tbody>
</table>
</details>
{{- end}}
</article>
{{- end}}
</section>

<section id="modules">
<h2>Modules</h2>
{{- if not .Modules}}
<p>This mirror holds no modules.</p>
{{- end}}
{{- range .Modules}}
<article class="module" id="{{.ID}}" data-name="{{.Filter}}">
<h3>{{.Address}}</h3>
<p class="meta">{{plural .Count "version"}} · <code>source = "{{.Source}}"</code> · <a href="{{.Index}}">index.json</a></p>
{{- if .Detailed}}
<table class="module-versions">
<thead><tr><th>Version</th><th>Package</th><th>SHA-256</th><th>Upstream</th><th>Mirrored</th></tr></thead>
<tbody>
{{- range .Detailed}}
<tr data-version="{{.Version}}">
<td><a href="{{.Doc}}">{{.Version}}</a></td>
<td class="size">{{if .Href}}<a href="{{.Href}}">{{.Version}}.zip</a> {{.Size}}{{end}}{{with .Problem}}<div class="problem">{{.}}</div>{{end}}</td>
<td class="digest"><code class="hash">{{.SHA256}}</code></td>
<td class="digest"><code>{{.Location}}</code>{{with .Commit}}<div class="meta">commit <code>{{.}}</code></div>{{end}}{{with .ArchiveSHA256}}<div class="meta">archive SHA-256 <code>{{.}}</code></div>{{end}}{{with .Subdir}}<div class="meta">subdirectory <code>{{.}}</code></div>{{end}}{{with .Calls}}<div class="meta">calls {{range $i, $c := .}}{{if $i}}, {{end}}<code>{{$c}}</code>{{end}}</div>{{end}}</td>
<td>{{template "when" .When}}</td>
</tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- if .Older}}
<details class="older">
<summary>{{plural (len .Older) "older version"}} (digests and upstream in their records)</summary>
<table>
<thead><tr><th>Version</th><th>Package</th><th>Mirrored</th></tr></thead>
<tbody>
{{- range .Older}}
<tr data-version="{{.Version}}"><td><a href="{{.Doc}}">{{.Version}}</a></td><td>{{if .Href}}<a href="{{.Href}}">{{.Version}}.zip</a> {{.Size}}{{end}}{{with .Problem}}<span class="problem">{{.}}</span>{{end}}</td><td>{{template "when" .When}}</td></tr>
{{- end}}
</tbody>
</table>
</details>
{{- end}}
</article>
{{- end}}
</section>
{{- if .Problems}}

<section id="problems">
<h2>Problems</h2>
<ul>
{{- range .Problems}}
<li class="problem">{{.}}</li>
{{- end}}
</ul>
</section>
{{- end}}
<script>{{.Script}}</script>
</body>
</html>
{{define "key"}}{{if .Signed}}<span class="key signed" title="signed by this OpenPGP key">key {{.Key}}</span>{{else}}<span class="key" title="{{.KeyNote}}">{{.Key}}</span>{{end}}{{end}}
{{- define "when"}}{{if .Shown}}<time datetime="{{.Time}}">{{.Shown}}</time>{{else if .Doc}}<span class="when" data-doc="{{.Doc}}">—</span>{{else}}unknown{{end}}{{end}}`))
